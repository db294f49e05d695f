// The dashboard's custom event properties panel (docs/api.md#properties): pick a custom event (or
// all of them) and one of the property keys seen in the range, and read that key's values with
// their events and sessions. The choice lives in the page's query string (`property`, `event`) as
// the range does, so a view is bookmarked with it; the numbers come with the range's statistics
// (GET /api/stats with propertyKeys=1, property= and event=), never in a request of their own.
import type { Stats } from '../../../lib/stats.ts';
import { el } from './dom.ts';
import type { ViewState } from './range.ts';
import { csvButton, fillBarTable, tableFor, type TableModel } from './tables.ts';

export interface PropertiesPanel {
  root: HTMLElement;
  /** The answer's properties; `ranged`: the answer covers a range (else there are none). */
  showStats(stats: Stats, ranged: boolean): void;
  setState(state: Pick<ViewState, 'property' | 'event'>): void;
}

const COLUMNS = ['Value', 'Events', 'Sessions'];

/** `pick` is called when the visitor chooses another event or key. */
export function createPropertiesPanel(pick: (change: Pick<ViewState, 'property' | 'event'>) => void): PropertiesPanel {
  let model: TableModel | null = null;
  const eventSelect = el('select', { attrs: { name: 'event' } });
  const keySelect = el('select', { attrs: { name: 'property' } });
  const note = el('p', { class: 'note', attrs: { 'data-properties-note': '' } });
  const body = el('tbody');
  const table = tableFor(COLUMNS, body, 'Values of the chosen property');
  const wrap = el('div', { class: 'table-wrap', attrs: { tabindex: '0', role: 'region', 'aria-label': 'Property values' } }, table);
  const root = el('section', { class: 'panel panel-properties panel-breakdown', attrs: { 'aria-labelledby': 'h-properties' } },
    el('div', { class: 'panel-head' }, el('h2', { text: 'Event properties', attrs: { id: 'h-properties' } }), csvButton('event properties', () => model)),
    el('div', { class: 'inline' },
      el('label', {}, el('span', { text: 'Event ' }), eventSelect),
      el('label', {}, el('span', { text: 'Property ' }), keySelect)),
    note, wrap);
  let chosen = { property: '', event: '' };

  /** Options of a select: the first with value '', then `names`, the chosen one kept even when absent. */
  const fill = (select: HTMLSelectElement, first: string, names: string[], value: string) => {
    const all = value && !names.includes(value) ? [value, ...names] : names;
    select.replaceChildren(el('option', { text: first, attrs: { value: '' } }), ...all.map((n) => el('option', { text: n, attrs: { value: n } })));
    select.value = value;
  };
  const changed = () => pick({ event: eventSelect.value, property: keySelect.value });
  eventSelect.addEventListener('change', changed);
  keySelect.addEventListener('change', changed);

  return {
    root,
    setState(s) {
      chosen = { property: s.property, event: s.event };
      if (![...eventSelect.options].some((o) => o.value === s.event)) fill(eventSelect, 'All custom events', [], s.event);
      if (![...keySelect.options].some((o) => o.value === s.property)) fill(keySelect, 'Choose a property', [], s.property);
      eventSelect.value = s.event;
      keySelect.value = s.property;
    },
    showStats(stats, ranged) {
      fill(eventSelect, 'All custom events', (stats.breakdowns?.customEvents ?? []).map((r) => r.name), chosen.event);
      fill(keySelect, 'Choose a property', (stats.propertyKeys ?? []).map((r) => r.name), chosen.property);
      const rows = chosen.property ? stats.properties?.[chosen.property] ?? [] : [];
      model = chosen.property ? { name: `property-${chosen.property}`, columns: COLUMNS, rows: rows.map((r) => [r.name, r.events, r.sessions]) } : null;
      // Why the table is empty, when it is: no range, a range reaching back before properties were
      // kept (the answer leaves them out), none seen, or none chosen yet.
      const why = !ranged ? 'Choose a time range (not "all") to see this.'
        : !('propertyKeys' in stats) ? 'Not counted for this range: it reaches back before the upgrade that added properties. Choose a later start.'
        : !stats.propertyKeys!.length ? 'No custom event properties in this range.'
        : !chosen.property ? 'Choose a property to see its values.'
        : 'No events with this property in this range.';
      note.textContent = rows.length ? `Values of “${chosen.property}”${chosen.event ? ` on “${chosen.event}” events` : ' on every custom event'}, most events first (at most 100).` : why;
      fillBarTable(body, model ?? { name: '', columns: COLUMNS, rows: [] }, why);
    },
  };
}
