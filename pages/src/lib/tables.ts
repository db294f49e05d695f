// The dashboard's tables as data: each is drawn from one model, and its CSV download is made from
// the same model, so the file holds exactly the rows on screen (numbers unformatted).
import { download, toCsv, type Cell } from './csv.ts';
import { el, fmt } from './dom.ts';

export interface TableModel {
  /** The file name without extension, and the table's caption for the download button. */
  name: string;
  columns: string[];
  rows: Cell[][];
}

const show = (c: Cell) => (typeof c === 'number' ? fmt.format(c) : c ?? '—');

/** Fills `body` with the model's rows; the first column names its row. */
export function fillTable(body: HTMLTableSectionElement, model: TableModel, empty: string): void {
  body.replaceChildren(
    ...(model.rows.length
      ? model.rows.map((row) => el('tr', {}, ...row.map((c, i) => (i === 0 ? el('th', { text: String(show(c)), attrs: { scope: 'row' } }) : el('td', { text: String(show(c)) })))))
      : [el('tr', {}, el('td', { class: 'empty', text: empty, attrs: { colspan: String(model.columns.length) } }))]),
  );
}

/**
 * Like fillTable, with a bar under each row's name showing its second column (its count) against
 * the largest: a picture of the numbers beside it, hidden from screen readers.
 */
export function fillBarTable(body: HTMLTableSectionElement, model: TableModel, empty: string): void {
  fillTable(body, model, empty);
  const top = Math.max(1, ...model.rows.map((r) => (typeof r[1] === 'number' ? r[1] : 0)));
  model.rows.forEach((row, i) => {
    const bar = el('span', { class: 'bar' });
    bar.style.width = `${((typeof row[1] === 'number' ? row[1] : 0) / top) * 100}%`;
    body.rows[i].cells[0].append(el('span', { class: 'bar-track', attrs: { 'aria-hidden': 'true' } }, bar));
  });
}

/** A table element with a header row for `columns`. */
export function tableFor(columns: string[], body: HTMLTableSectionElement, caption?: string): HTMLTableElement {
  return el('table', {},
    caption ? el('caption', { class: 'visually-hidden', text: caption }) : null,
    el('thead', {}, el('tr', {}, ...columns.map((h) => el('th', { text: h, attrs: { scope: 'col' } })))),
    body);
}

/** A button that downloads the model `current()` returns as CSV. */
export function csvButton(label: string, current: () => TableModel | null): HTMLButtonElement {
  const b = el('button', { class: 'small', text: 'CSV', attrs: { type: 'button', 'aria-label': `Download ${label} as CSV`, 'data-csv': label } });
  b.addEventListener('click', () => {
    const model = current();
    if (model) download(`watchtower-${model.name}.csv`, 'text/csv;charset=utf-8', [toCsv(model.columns, model.rows)]);
  });
  return b;
}
