// Every served page shares one <head> (pages/head.html): a page's file keeps only its own lines
// (its <title>, a description, its scripts), and the head is assembled when the page is served, so
// the shared lines exist once and no page can drift from them.

const HEAD = /<head>\n([\s\S]*?)<\/head>\n/;

/**
 * The page with its head made from `template`: `{{title}}` becomes the page's <title> line and
 * `{{own}}` the page's other head lines, in order. A page without a <head> block is served as it is.
 */
export function renderHead(template: string, html: string): string {
  const head = HEAD.exec(html);
  if (!head) return html;
  const lines = head[1].split('\n').filter((l) => l.trim() !== '');
  const title = lines.find((l) => l.startsWith('<title>')) ?? '';
  const own = lines.filter((l) => l !== title);
  const filled = template
    .replace('{{title}}\n', title ? title + '\n' : '')
    .replace('{{own}}\n', own.length ? own.join('\n') + '\n' : '');
  return html.slice(0, head.index) + filled + html.slice(head.index + head[0].length);
}
