// Every served page's <head> is made from the one template, pages/head.html, when it is served
// (lib/page-head.ts): the page files keep only their own lines, so none can drift from the rest.
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHandler, createMemoryStore } from '../lib/mod.ts';
import { renderHead } from '../lib/page-head.ts';
import { runtimeFiles } from './helpers/app.ts';
import { ROOT } from './helpers/server.ts';

const TEMPLATE = readFileSync(`${ROOT}/pages/head.html`, 'utf8');
/** The template's own lines: every page's head has each exactly once, and no page file has any. */
const SHARED = TEMPLATE.split('\n').filter((l) => l !== '' && !l.includes('{{') && l !== '<head>' && l !== '</head>');

/** Page directories (and the nested demo page) with an index.html, as URL paths. */
function pagePaths(): string[] {
  const out: string[] = [];
  const walk = (dir: string, url: string) => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      if (!d.isDirectory() || d.name === 'src') continue;
      if (existsSync(`${dir}/${d.name}/index.html`)) out.push(`${url}${d.name}/`);
      walk(`${dir}/${d.name}`, `${url}${d.name}/`);
    }
  };
  walk(`${ROOT}/pages`, '/');
  return out;
}

test('the template fills in a page\'s title and own lines, in order', () => {
  const template = '<head>\n<meta charset="utf-8">\n{{title}}\n<link rel="stylesheet" href="/s.css">\n{{own}}\n</head>\n';
  const page = '<!doctype html>\n<head>\n<title>T</title>\n<script src="/a.js"></script>\n<script src="/b.js"></script>\n</head>\n<body></body>\n';
  assert.is(renderHead(template, page),
    '<!doctype html>\n<head>\n<meta charset="utf-8">\n<title>T</title>\n<link rel="stylesheet" href="/s.css">\n<script src="/a.js"></script>\n<script src="/b.js"></script>\n</head>\n<body></body>\n');
  assert.is(renderHead(template, page.replace('<script src="/a.js"></script>\n<script src="/b.js"></script>\n', '')),
    '<!doctype html>\n<head>\n<meta charset="utf-8">\n<title>T</title>\n<link rel="stylesheet" href="/s.css">\n</head>\n<body></body>\n');
  // A page without a head block (an embedder's own pages) is left as it is.
  assert.is(renderHead(template, '<p>hi</p>\n'), '<p>hi</p>\n');
});

test('no page file repeats a line of the template', () => {
  const paths = pagePaths();
  assert.ok(paths.length >= 10, `found ${paths.length} pages`);
  for (const path of paths) {
    const html = readFileSync(`${ROOT}/pages${path}index.html`, 'utf8');
    for (const line of SHARED) assert.not.ok(html.includes(line), `pages${path}index.html repeats ${line}`);
  }
});

test('every page is served with the template\'s head around its own title and scripts', async () => {
  const handler = createHandler({ store: createMemoryStore(), files: runtimeFiles, log: () => {} });
  for (const path of pagePaths()) {
    const res = await handler(new Request(`http://localhost${path}`));
    assert.is(res.status, 200, path);
    const html = await res.text();
    const head = /<head>\n([\s\S]*?)<\/head>\n/.exec(html)?.[1] ?? '';
    const lines = head.split('\n');
    for (const line of SHARED) assert.is(lines.filter((l) => l === line).length, 1, `${path}: ${line}`);
    assert.is(lines.filter((l) => l.startsWith('<title>')).length, 1, `${path}: one title`);
    // The page's own lines come after the stylesheet, as the template places them.
    const own = readFileSync(`${ROOT}/pages${path}index.html`, 'utf8').match(/<script[^\n]*<\/script>/g) ?? [];
    for (const script of own) assert.ok(lines.indexOf(script) > lines.indexOf('<link rel="stylesheet" href="/assets/style.css">'), `${path}: ${script}`);
  }
});

test('a page\'s tag changes when the template does, so a cached page is not kept', async () => {
  const stats = new Map<string, { size: number; mtimeMs: number }>();
  const files = {
    stat: async (p: string) => {
      const s = await runtimeFiles.stat(p);
      const o = stats.get(p);
      return s && o ? { ...s, ...o } : s;
    },
    readFile: runtimeFiles.readFile,
  };
  const handler = createHandler({ store: createMemoryStore(), files, log: () => {} });
  const first = (await handler(new Request('http://localhost/issues/'))).headers.get('etag');
  stats.set(`${ROOT}/pages/head.html`.replace(/\/+/g, '/'), { size: 1, mtimeMs: 1 });
  const changed = (await handler(new Request('http://localhost/issues/'))).headers.get('etag');
  assert.ok(first && changed && first !== changed, `${first} vs ${changed}`);
});

test.run();
