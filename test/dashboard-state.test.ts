// The dashboard's pure parts: the view state in the query string, the spans it asks the API for,
// the comparison with the previous period, and CSV writing (quoting, formula injection, the
// NDJSON-to-CSV conversion of an export).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { csvCell, EVENT_COLUMNS, ndjsonToCsv, toCsv } from '../pages/src/lib/csv.ts';
import { delta, endsNow, eventsQuery, parseDay, previousSpan, readState, spanOf, statsQuery, writeState } from '../pages/src/lib/range.ts';

const NOW = Date.parse('2026-05-16T12:34:56.789Z');
const DAY = 86_400_000;

test('readState falls back to the last 7 days and ignores what it does not know', () => {
  assert.equal(readState(''), { range: '7d', from: '', to: '', project: '', type: '', version: '', route: '', property: '', event: '' });
  assert.is(readState('?range=forever').range, '7d');
  assert.equal(readState('?range=30d&type=click&version=1.2&route=%2Fnotes'), { range: '30d', from: '', to: '', project: '', type: 'click', version: '1.2', route: '/notes', property: '', event: '' });
  // A custom range needs two real days in order; anything else is the default range.
  assert.equal(readState('?range=custom&from=2026-05-01&to=2026-05-03'), { range: 'custom', from: '2026-05-01', to: '2026-05-03', project: '', type: '', version: '', route: '', property: '', event: '' });
  for (const q of ['?range=custom', '?range=custom&from=2026-05-03&to=2026-05-01', '?range=custom&from=2026-02-30&to=2026-03-01', '?range=custom&from=x&to=y']) {
    assert.is(readState(q).range, '7d', q);
  }
  assert.is(readState(`?type=${'x'.repeat(1000)}`).type.length, 256, 'a bookmark cannot smuggle a huge filter');
  assert.is(readState('?project=123456789012&range=24h').project, '123456789012');
  for (const q of ['?project=abc', '?project=1%20OR%201', `?project=${'1'.repeat(21)}`, '?project=']) assert.is(readState(q).project, '', q);
  // A property key as the API takes them (at most 40 characters, no control characters).
  assert.equal([readState('?property=plan&event=signup').property, readState('?property=plan&event=signup').event], ['plan', 'signup']);
  for (const q of [`?property=${'k'.repeat(41)}`, '?property=a%0Ab']) assert.is(readState(q).property, '', q);
});

test('writeState writes only what differs from the default, and readState reads it back', () => {
  assert.is(writeState(readState('')), '');
  const states = ['?range=24h', '?range=all&type=error', '?range=custom&from=2026-05-01&to=2026-05-01&route=%2Fa+b', '?version=2.0.0-beta.1', '?range=30d&project=123456789012&type=click', '?property=plan+name&event=sign+up'];
  for (const q of states) assert.is(writeState(readState(q)), q);
});

test('spans: presets are whole hours ending with the current one, custom ranges whole UTC days with the end day included, all is none', () => {
  const END = Date.parse('2026-05-16T13:00:00.000Z');
  assert.equal(spanOf(readState('?range=24h'), NOW), { from: END - DAY, to: END, interval: 'hour' });
  assert.equal(spanOf(readState(''), NOW), { from: END - 7 * DAY, to: END, interval: 'day' });
  assert.equal(spanOf(readState('?range=90d'), NOW), { from: END - 90 * DAY, to: END, interval: 'day' });
  assert.equal(spanOf(readState('?range=24h'), END), { from: END - DAY, to: END, interval: 'hour' }, 'on the hour: that hour ends the range');
  assert.is(spanOf(readState('?range=all'), NOW), null);
  assert.equal(spanOf(readState('?range=custom&from=2026-05-01&to=2026-05-02'), NOW), { from: Date.parse('2026-05-01T00:00:00Z'), to: Date.parse('2026-05-03T00:00:00Z'), interval: 'hour' });
  assert.equal(spanOf(readState('?range=custom&from=2026-05-01&to=2026-05-10'), NOW)!.interval, 'day');
  assert.equal(previousSpan({ from: NOW - 7 * DAY, to: NOW, interval: 'day' }), { from: NOW - 14 * DAY, to: NOW - 7 * DAY, interval: 'day' });
});

test('a range reaches the present (and follows new events) unless it is a custom one that ended', () => {
  assert.ok(endsNow(readState('?range=24h'), NOW));
  assert.ok(endsNow(readState('?range=all'), NOW));
  assert.ok(endsNow(readState('?range=custom&from=2026-05-10&to=2026-05-16'), NOW), 'today is included');
  assert.not.ok(endsNow(readState('?range=custom&from=2026-05-10&to=2026-05-15'), NOW));
});

test('API queries: stats from/to/interval, events since/until and the filters', () => {
  assert.is(statsQuery(null), '');
  assert.is(statsQuery({ from: Date.parse('2026-05-01T00:00:00Z'), to: Date.parse('2026-05-02T00:00:00Z'), interval: 'hour' }),
    '?from=2026-05-01T00%3A00%3A00.000Z&to=2026-05-02T00%3A00%3A00.000Z&interval=hour');
  const q = eventsQuery({ from: 0, to: DAY, interval: 'hour' }, { type: 'click', version: '' }, { limit: '50' });
  assert.equal(Object.fromEntries(q), { limit: '50', since: '1970-01-01T00:00:00.000Z', until: '1970-01-02T00:00:00.000Z', type: 'click' });
  assert.is(eventsQuery(null, { type: '', version: '' }).toString(), '');
  // The project goes with every request of the dashboard, "all" included.
  assert.is(statsQuery(null, '42'), '?project=42');
  // Properties go with a range only: the keys always, the chosen key and event when chosen.
  assert.is(statsQuery(null, '', { property: 'plan', event: '' }), '');
  assert.is(statsQuery({ from: 0, to: DAY, interval: 'hour' }, '', { property: 'plan', event: 'sign up' }),
    '?from=1970-01-01T00%3A00%3A00.000Z&to=1970-01-02T00%3A00%3A00.000Z&interval=hour&propertyKeys=1&property=plan&event=sign+up');
  assert.is(new URLSearchParams(statsQuery({ from: 0, to: DAY, interval: 'hour' }, '42')).get('project'), '42');
  assert.is(eventsQuery(null, { type: '', version: '', project: '42' }).toString(), 'project=42');
});

test('delta: percentages, "no change", "new" for a count that was 0, "no previous data" without a previous period', () => {
  assert.equal(delta(6, 4), { text: '+50%', direction: 'up' });
  assert.equal(delta(1, 2), { text: '−50%', direction: 'down' });
  assert.equal(delta(103, 100), { text: '+3%', direction: 'up' });
  assert.equal(delta(1004, 1000), { text: '+0.4%', direction: 'up' });
  assert.equal(delta(100, 100), { text: 'no change', direction: 'flat' });
  assert.equal(delta(10001, 10000), { text: 'no change', direction: 'flat' });
  assert.equal(delta(5, 0), { text: 'new', direction: 'up' });
  assert.equal(delta(0, 0), { text: 'no change', direction: 'flat' });
  assert.equal(delta(5, null), { text: 'no previous data', direction: null });
  assert.not.match(JSON.stringify([delta(5, 0), delta(0, 0), delta(5, null)]), /Infinity|NaN/);
});

test('parseDay accepts real days only', () => {
  assert.is(parseDay('2026-05-16'), Date.parse('2026-05-16T00:00:00Z'));
  for (const s of ['2026-02-30', '2026-5-1', '', '2026-05-16T00:00:00Z', 'today']) assert.ok(Number.isNaN(parseDay(s)), s);
});

test('CSV: quoting, line ends, and cells a spreadsheet would run as formulas written as text', () => {
  assert.is(csvCell('plain'), 'plain');
  assert.is(csvCell('a,b'), '"a,b"');
  assert.is(csvCell('say "hi"'), '"say ""hi"""');
  assert.is(csvCell('two\nlines'), '"two\nlines"');
  assert.is(csvCell(null), '');
  assert.is(csvCell(-3.5), '-3.5', 'a negative number is data');
  assert.is(csvCell(Number.NaN), '');
  for (const f of ['=1+1', '+1', '-1', '@SUM(A1)', '\t=1', '\r=1']) assert.is(csvCell(f)[0] === '"' ? csvCell(f)[1] : csvCell(f)[0], "'", f);
  assert.is(csvCell('=HYPERLINK("http://x","y")'), `"'=HYPERLINK(""http://x"",""y"")"`);
  assert.is(toCsv(['a', 'b'], [[1, 'x'], ['-2', null]]), "a,b\r\n1,x\r\n'-2,\r\n");
  // After leading white space of any kind, and in their full-width forms, = + - @ still start a formula.
  const spaces = [' ', '\t', '\r', '\n', '\u00a0', '\u2000', '\u2005', '\u200a', '\u3000', '\ufeff', '\u202f', '\u205f', '\u1680', '\u2028', '\u200b', '\u2060', '\u180e'];
  const starts = ['=', '+', '-', '@', '\uff1d', '\uff0b', '\uff0d', '\uff20'];
  const unquoted = (cell: string) => (cell.startsWith('"') ? cell.slice(1, -1).replace(/""/g, '"') : cell);
  for (const space of ['', ...spaces]) {
    for (const start of starts) {
      for (const text of [`${space}${start}1+1`, `${space}${space}${start}cmd|' /C calc'!A0`]) {
        assert.is(unquoted(csvCell(text)), `'${text}`, JSON.stringify(text));
      }
    }
  }
  for (const text of ['\tplain', '\rplain']) assert.is(unquoted(csvCell(text)), `'${text}`, JSON.stringify(text));
  // Text that only looks close stays as it is.
  for (const text of [' plain', '\u00a0x', 'a=1', 'x-1', 'user@example.com', '\uff41', '１+1', '']) assert.is(unquoted(csvCell(text)), text, JSON.stringify(text));
});

test('an NDJSON export becomes CSV chunk by chunk, lines split across chunks included', async () => {
  const events = [
    { id: '1', type: 'click', receivedAt: '2026-05-16T00:00:00.000Z', data: { text: 'a,"b"' } },
    { id: '2', type: 'error', receivedAt: '2026-05-16T00:00:01.000Z', message: '=cmd|calc', data: {} },
  ];
  const text = events.map((e) => JSON.stringify(e)).join('\n') + '\n';
  const bytes = new TextEncoder().encode(text);
  // Cut in the middle of the first line and of a multi-byte character-free boundary.
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(bytes.slice(0, 17));
      c.enqueue(bytes.slice(17, 90));
      c.enqueue(bytes.slice(90));
      c.close();
    },
  });
  let csv = '';
  for await (const chunk of ndjsonToCsv(body as NonNullable<Response['body']>)) csv += chunk;
  const lines = csv.split('\r\n');
  assert.is(lines[0], EVENT_COLUMNS.join(','));
  assert.is(lines.length, 4);
  assert.is(lines[1], '2026-05-16T00:00:00.000Z,,click,,,,,,,,,1,"{""text"":""a,\\""b\\""""}"');
  assert.match(lines[2]!, /,'=cmd\|calc,/);
  assert.is(lines[3], '');
});

test.run();
