// CSV for the dashboard's downloads (RFC 4180: CRLF line ends, fields quoted when they hold a
// comma, a quote or a line break, quotes doubled). Cells come from event data anyone can send, so a
// text cell that a spreadsheet could run as a formula gets a leading apostrophe and is shown as
// text: one that starts with a tab or a carriage return, and one that starts with = + - @ or their
// full-width forms (＝ ＋ － ＠, which some spreadsheets read as the ASCII ones) once any leading white
// space is skipped, as spreadsheets trim it: spaces, tabs, line breaks, no-break and other Unicode
// spaces (U+00A0, U+2000–U+200A, U+3000, …), the byte order mark, and zero-width spaces and joiners.
// Numbers are written as numbers: a negative number is data, not a formula.

export type Cell = string | number | null | undefined;

/** `\s` is every Unicode space, line break and U+FEFF; the rest are invisible characters a cell may start with. */
const FORMULA = /^(?:[\t\r]|[\s\u180e\u200b-\u200d\u2060]*[=+\-@\uff1d\uff0b\uff0d\uff20])/;

export function csvCell(value: Cell): string {
  if (value === null || value === undefined) return '';
  let text = typeof value === 'number' ? (Number.isFinite(value) ? String(value) : '') : String(value);
  if (typeof value === 'string' && FORMULA.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export const csvRow = (cells: readonly Cell[]): string => cells.map(csvCell).join(',') + '\r\n';

export function toCsv(columns: readonly string[], rows: readonly (readonly Cell[])[]): string {
  return csvRow(columns) + rows.map(csvRow).join('');
}

/** The columns of an event in the CSV export: the fields people sort and filter on, and the rest as JSON. */
export const EVENT_COLUMNS = ['receivedAt', 'timestamp', 'type', 'deployVersion', 'appName', 'route', 'url', 'sessionId', 'message', 'severity', 'referrer', 'id', 'data'] as const;

export function eventCells(e: Record<string, unknown>): Cell[] {
  return EVENT_COLUMNS.map((k) => {
    const v = e[k];
    if (k === 'data') return v && typeof v === 'object' ? JSON.stringify(v) : '';
    return typeof v === 'string' || typeof v === 'number' ? v : '';
  });
}

/**
 * Turns an NDJSON stream (the export endpoint's body) into CSV chunks, one per chunk read, so a
 * long export never sits in memory as one string twice. A line that is not JSON is skipped.
 */
export async function* ndjsonToCsv(body: NonNullable<Response['body']>): AsyncGenerator<string> {
  yield csvRow(EVENT_COLUMNS);
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  const convert = (lines: string[]) => {
    let out = '';
    for (const line of lines) {
      if (!line.trim()) continue;
      try {
        const e: unknown = JSON.parse(line);
        if (e && typeof e === 'object') out += csvRow(eventCells(e as Record<string, unknown>));
      } catch {
        // Not a line of the export; nothing to write.
      }
    }
    return out;
  };
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += value;
    const lines = buffer.split('\n');
    buffer = lines.pop() ?? '';
    const out = convert(lines);
    if (out) yield out;
  }
  const rest = convert([buffer]);
  if (rest) yield rest;
}

/** Offers `parts` to the user as a file named `name`. */
export function download(name: string, type: string, parts: BlobPart[]): void {
  const url = URL.createObjectURL(new Blob(parts, { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  // The download has started by the time the click returns; the URL is only needed until then.
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
