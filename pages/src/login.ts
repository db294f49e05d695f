// /login/: signed-in visitors go to /dashboard (or back to the page that sent them, an invitation);
// others get the sign-in component
// in #idp-sign-in and sign-up in #idp-sign-up — a development form, or the provider's buttons.
import { byId, el } from './lib/dom.ts';
import { completeProviderSignIn, currentSession, devSignIn, mode, providerSignIn } from './lib/session.ts';
import { RETURN_KEY } from './lib/shell.ts';

/** Where to go once signed in: a same-origin path a page asked for, once, else the dashboard. */
function next(): string {
  const wanted = sessionStorage.getItem(RETURN_KEY);
  sessionStorage.removeItem(RETURN_KEY);
  return wanted && wanted.startsWith('/') && !wanted.startsWith('//') ? wanted : '/dashboard';
}

const signIn = byId('idp-sign-in');
const signUp = byId('idp-sign-up');
const problem = byId('login-problem');

try {
  await completeProviderSignIn();
  if (await currentSession()) {
    location.replace(next());
  } else {
    mode() === 'provider' ? mountProvider() : mountDev();
    byId('login').hidden = false;
  }
} catch (err) {
  mode() === 'provider' ? mountProvider() : mountDev();
  byId('login').hidden = false;
  report(err);
}

function report(err: unknown) {
  problem.textContent = err instanceof Error ? err.message : String(err);
  problem.hidden = false;
}

function field(label: string, name: string, type: string, attrs: Record<string, string> = {}) {
  const input = el('input', { attrs: { name, type, autocomplete: 'off', ...attrs } });
  return [el('label', {}, el('span', { text: label }), input), input] as const;
}

function devForm(kind: 'in' | 'up'): HTMLFormElement {
  const [idLabel, id] = field('User id', 'userId', 'text', { required: '', maxlength: '256', placeholder: 'user_1', pattern: '\\S+' });
  const [emailLabel, email] = field('Email', 'email', 'email', kind === 'up' ? { required: '', placeholder: 'ada@example.com' } : { placeholder: 'optional' });
  const [nameLabel, name] = field('Display name', 'displayName', 'text', kind === 'up' ? { required: '', placeholder: 'Ada' } : { placeholder: 'optional' });
  const form = el('form', { class: 'dev-form', attrs: { 'data-form': `sign-${kind}` } },
    idLabel, emailLabel, nameLabel,
    el('button', { class: 'primary', text: kind === 'in' ? 'Sign in (development)' : 'Create development user', attrs: { type: 'submit' } }));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const userId = id.value.trim();
    if (!userId) return;
    devSignIn({ userId, email: email.value.trim(), displayName: name.value.trim() || userId });
    location.replace(next());
  });
  return form;
}

function mountDev() {
  const badge = () => el('p', { class: 'dev-badge', text: 'Development mode — no identity provider is configured. The server trusts the user id you type: never expose this mode to the internet.' });
  signIn.replaceChildren(badge(), devForm('in'));
  signUp.replaceChildren(el('p', { class: 'note', text: 'Development users exist as soon as you name them; the dashboard records the email and display name.' }), devForm('up'));
}

function mountProvider() {
  const button = (text: string, up: boolean) => {
    const b = el('button', { class: up ? '' : 'primary', text, attrs: { type: 'button', 'data-action': up ? 'sign-up' : 'sign-in' } });
    b.addEventListener('click', () => {
      b.disabled = true;
      providerSignIn(up).catch((err) => {
        b.disabled = false;
        report(err);
      });
    });
    return b;
  };
  signIn.replaceChildren(el('p', { class: 'note', text: 'Sign in with your organisation’s identity provider.' }), button('Sign in', false));
  signUp.replaceChildren(el('p', { class: 'note', text: 'New here? Create an account with the identity provider.' }), button('Create an account', true));
}
