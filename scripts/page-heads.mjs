// The <head> of every served page comes from one template, pages/head.html: a page keeps only its
// own lines (its <title>, a description, its scripts) and this writes the rest around them.
// Usage: node scripts/page-heads.mjs [--check]   (--check lists pages out of step and exits 1)
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../pages/', import.meta.url));
const HEAD = /<head>\n[\s\S]*?<\/head>\n/;
const OWN = /^<(script\b|meta name="description")/;

/** The page's head as the template makes it, around the page's own lines. */
export function renderHead(template, html) {
  const head = HEAD.exec(html)?.[0];
  if (!head) throw new Error('no <head> in the page');
  const lines = head.split('\n');
  const title = lines.find((l) => l.startsWith('<title>'));
  if (!title) throw new Error('the page has no <title>');
  const own = lines.filter((l) => OWN.test(l));
  return template.replace('{{title}}', title).replace(own.length ? '{{own}}' : '{{own}}\n', own.join('\n'));
}

/** Pages whose head is not the template's; with `write`, rewrites them. */
export async function syncHeads({ write = false } = {}) {
  const template = await readFile(root + 'head.html', 'utf8');
  const stale = [];
  for (const dir of (await readdir(root, { withFileTypes: true })).filter((d) => d.isDirectory() && d.name !== 'src')) {
    const path = `${root}${dir.name}/index.html`;
    const html = await readFile(path, 'utf8').catch(() => null);
    if (html === null) continue;
    const next = html.replace(HEAD, renderHead(template, html));
    if (next === html) continue;
    stale.push(`pages/${dir.name}/index.html`);
    if (write) await writeFile(path, next);
  }
  return stale;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const check = process.argv.includes('--check');
  const stale = await syncHeads({ write: !check });
  if (check && stale.length) {
    console.error(`heads not made from pages/head.html: ${stale.join(', ')} (run node scripts/page-heads.mjs)`);
    process.exit(1);
  }
  console.log(check ? 'every page head is the template\'s' : `rewrote ${stale.length} page heads`);
}
