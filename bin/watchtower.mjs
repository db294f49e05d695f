#!/usr/bin/env node
// The package's command line (README, "Source maps"):
//
//   watchtower sourcemaps upload --url <service> --project <id> --release <release> [--prefix <url>] <folder>
//
// Uploads every .map file below <folder> to POST <service>/api/projects/<id>/sourcemaps, for the
// minified file beside it (the map's name without .map), whose URL is <prefix> + its path inside
// the folder. The default prefix, `~/`, matches that path on any host. Credentials: a bearer token
// from --token or WATCHTOWER_TOKEN, or, against a service in development mode, the user id from
// --user or WATCHTOWER_USER (sent as X-IdP-User-Id).
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { parseArgs } from 'node:util';

const USAGE = `Usage: watchtower sourcemaps upload --url <service URL> --project <id> --release <release> [--prefix ~/assets/] [--token <token>] <folder>

Uploads every .map file in <folder> (and below) for the given release. Each map is registered for
the minified file beside it, at <prefix> + its path inside the folder (default prefix "~/": that
path on any host). The token comes from --token or WATCHTOWER_TOKEN; a service in development mode
takes a user id instead (--user or WATCHTOWER_USER).`;

function fail(message) {
  console.error(`watchtower: ${message}`);
  process.exit(1);
}

async function mapsIn(folder) {
  const out = [];
  for (const entry of await readdir(folder, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith('.map')) out.push(join(entry.parentPath ?? entry.path, entry.name));
  }
  return out.sort();
}

async function upload(argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      project: { type: 'string' },
      release: { type: 'string' },
      prefix: { type: 'string', default: '~/' },
      token: { type: 'string' },
      user: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return console.log(USAGE);
  if (!values.url || !values.project || !values.release || positionals.length !== 1) fail(`--url, --project, --release and one folder are required\n\n${USAGE}`);
  const token = values.token ?? process.env.WATCHTOWER_TOKEN;
  const user = values.user ?? process.env.WATCHTOWER_USER;
  if (!token && !user) fail('no credentials: pass --token or set WATCHTOWER_TOKEN (or, in development mode, --user / WATCHTOWER_USER)');
  const prefix = values.prefix.endsWith('/') ? values.prefix : `${values.prefix}/`;
  const folder = positionals[0];
  const endpoint = `${values.url.replace(/\/+$/, '')}/api/projects/${encodeURIComponent(values.project)}/sourcemaps`;
  const headers = { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : { 'x-idp-user-id': user }) };

  let maps;
  try {
    maps = await mapsIn(folder);
  } catch (e) {
    fail(`cannot read ${folder}: ${e.message}`);
  }
  if (maps.length === 0) fail(`no .map files in ${folder}`);
  let failed = 0;
  for (const file of maps) {
    const minified = relative(folder, file).slice(0, -'.map'.length).split(sep).join('/');
    const url = prefix + minified;
    const map = await readFile(file, 'utf8');
    let res;
    try {
      res = await fetch(endpoint, { method: 'POST', headers, body: JSON.stringify({ release: values.release, url, map }) });
    } catch (e) {
      fail(`cannot reach ${endpoint}: ${e.cause?.message ?? e.message}`);
    }
    const answer = await res.json().catch(() => ({}));
    if (res.status === 201) {
      console.log(`uploaded ${relative(folder, file)} for ${url} (release ${values.release})`);
    } else {
      failed++;
      console.error(`watchtower: ${relative(folder, file)} was refused (${res.status}): ${answer.error ?? res.statusText}`);
    }
  }
  if (failed > 0) process.exit(1);
}

const [command, sub, ...rest] = process.argv.slice(2);
if (command === 'sourcemaps' && sub === 'upload') await upload(rest);
else if (command === undefined || command === '--help' || command === '-h') console.log(USAGE);
else fail(`unknown command "${[command, sub].filter(Boolean).join(' ')}"\n\n${USAGE}`);
