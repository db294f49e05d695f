// Every served page's <head> is made from the one template, pages/head.html (scripts/page-heads.mjs).
import { spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT } from './helpers/server.ts';

declare const Deno: unknown;
const node = typeof Deno !== 'undefined' ? 'node' : process.execPath;

test('every page head is the template\'s, around the page\'s own title and scripts', () => {
  const r = spawnSync(node, ['scripts/page-heads.mjs', '--check'], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  assert.is(r.status, 0, r.stderr || r.stdout);
});

test('a page whose head strays from the template is found and rewritten', async () => {
  // @ts-ignore: a build script in plain JavaScript, without type declarations.
  const { renderHead } = await import('../scripts/page-heads.mjs');
  const template = '<head>\n<meta charset="utf-8">\n{{title}}\n{{own}}\n</head>\n';
  const page = '<!doctype html>\n<head>\n<meta charset="latin1">\n<title>T</title>\n<script src="/a.js"></script>\n</head>\n<body></body>\n';
  assert.is(renderHead(template, page), '<head>\n<meta charset="utf-8">\n<title>T</title>\n<script src="/a.js"></script>\n</head>\n');
  assert.is(renderHead(template, page.replace('<script src="/a.js"></script>\n', '')), '<head>\n<meta charset="utf-8">\n<title>T</title>\n</head>\n');
});

test.run();
