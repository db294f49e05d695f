// What a click is reported as: a short CSS selector and the visible label, never what was typed.

/** The part of an Element the selector needs (tests pass plain objects). */
export interface ElementLike {
  tagName: string;
  id?: string;
  className?: unknown;
  parentElement: ElementLike | null;
  textContent?: string | null;
  isContentEditable?: boolean;
  getAttribute?(name: string): string | null;
  querySelector?(selectors: string): unknown;
  closest?(selectors: string): ElementLike | null;
}

const IDENT = /^-?[A-Za-z_][\w-]*$/;
/** Clicks land on the icon or span inside a button; the control is what people recognise. */
export const CONTROL = 'a,button,input,select,textarea,label,summary,[role=button],[role=link],[role=tab],[role=menuitem],[onclick]';
const FORM_FIELD = /^(INPUT|TEXTAREA|SELECT|OPTION)$/;

/** `main > form.signup > button.primary`, at most `depth` levels, stopping at an element with an id. */
export function selector(el: ElementLike, depth = 3): string {
  const parts: string[] = [];
  for (let e: ElementLike | null = el; e && parts.length < depth; e = e.parentElement) {
    const tag = e.tagName.toLowerCase();
    if (tag == 'html' || tag == 'body') break;
    if (e.id && IDENT.test(e.id)) {
      parts.unshift(`${tag}#${e.id}`);
      break;
    }
    const classes = typeof e.className == 'string' ? e.className.split(/\s+/).filter((c) => IDENT.test(c)).slice(0, 2) : [];
    const name = e.getAttribute?.('name');
    parts.unshift(tag + classes.map((c) => '.' + c).join('') + (name && /^[\w-]+$/.test(name) ? `[name=${name}]` : ''));
  }
  return parts.join(' > ');
}

/**
 * The label of a clicked element, whitespace collapsed, at most 80 characters. Form fields,
 * editable regions and anything containing them report no text: their content is user input.
 */
export function clickText(el: ElementLike): string {
  const label = el.getAttribute?.('aria-label');
  if (label) return label.trim().slice(0, 80);
  if (FORM_FIELD.test(el.tagName.toUpperCase()) || el.isContentEditable || el.querySelector?.('input,textarea,select,[contenteditable]')) {
    return '';
  }
  return (el.textContent ?? '').replace(/\s+/g, ' ').trim().slice(0, 80);
}
