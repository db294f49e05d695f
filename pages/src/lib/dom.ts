// DOM building without HTML strings: every value reaches the page as text (textContent), so an
// event field such as `<img src=x onerror=…>` can only ever be displayed, never parsed.

type Child = Node | string | null | undefined | false;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { class?: string; text?: string; attrs?: Record<string, string>; title?: string } = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (props.class) node.className = props.class;
  if (props.text !== undefined) node.textContent = props.text;
  if (props.title !== undefined) node.title = props.title;
  for (const [k, v] of Object.entries(props.attrs ?? {})) node.setAttribute(k, v);
  for (const c of children) if (c !== null && c !== undefined && c !== false) node.append(c);
  return node;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (!node) throw new Error(`#${id} is missing from the page`);
  return node as T;
}

export const fmt = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });

export function formatTime(iso: unknown): string {
  const t = typeof iso === 'string' ? Date.parse(iso) : NaN;
  if (!Number.isFinite(t)) return '—';
  const d = new Date(t);
  const sameDay = d.toDateString() === new Date().toDateString();
  return sameDay ? d.toLocaleTimeString() : d.toLocaleString();
}

/** A short one-line description of an event, from its own (untrusted) fields. */
export function summarize(e: Record<string, unknown>): string {
  const data = (e.data && typeof e.data === 'object' ? e.data : {}) as Record<string, unknown>;
  const s = (v: unknown) => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');
  switch (e.type) {
    case 'error': return s(e.message) || s(data.message) || 'Error';
    case 'click': return s(data.text) || s(data.target) || 'click';
    case 'pageload': return `${s(e.route) || s(e.url) || ''} ${typeof data.duration === 'number' ? Math.round(data.duration) + ' ms' : ''}`.trim();
    case 'feedback': return `rating ${s(data.rating)}${data.comment ? ' · ' + s(data.comment) : ''}`;
    default: return s(e.message) || s(data.name) || s(data.event) || s(e.route) || s(e.url) || '';
  }
}
