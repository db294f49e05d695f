// How the dashboard shows the breakdowns and web vitals of GET /api/stats (docs/api.md#breakdowns):
// the tables' titles and columns, and each vital's p75 with its rating in words (the colour only
// repeats what the word says).
import { VITAL_THRESHOLDS, type BreakdownRow, type Breakdowns, type PageRow, type VitalName } from '../../../lib/breakdowns.ts';
import type { Cell } from './csv.ts';
import { el, fmt } from './dom.ts';

export type BreakdownKey = keyof Breakdowns;

interface BreakdownPanel {
  key: BreakdownKey;
  title: string;
  /** The download's file name (without extension). */
  file: string;
  columns: string[];
  empty: string;
  cells: (row: BreakdownRow) => Cell[];
}

const counts = (r: BreakdownRow): Cell[] => [r.name, r.events, r.sessions];

export const BREAKDOWN_PANELS: BreakdownPanel[] = [
  { key: 'pages', title: 'Top pages', file: 'top-pages', columns: ['Page', 'Views', 'Sessions', 'p75 load ms'], empty: 'No page loads in this range.', cells: (r) => [...counts(r), (r as PageRow).p75] },
  { key: 'referrers', title: 'Referrers', file: 'referrers', columns: ['Referrer', 'Page loads', 'Sessions'], empty: 'No page loads in this range.', cells: counts },
  { key: 'browsers', title: 'Browsers', file: 'browsers', columns: ['Browser', 'Events', 'Sessions'], empty: 'No events in this range.', cells: counts },
  { key: 'os', title: 'Operating systems', file: 'operating-systems', columns: ['OS', 'Events', 'Sessions'], empty: 'No events in this range.', cells: counts },
  { key: 'devices', title: 'Device types', file: 'device-types', columns: ['Device', 'Events', 'Sessions'], empty: 'No events in this range.', cells: counts },
  { key: 'versions', title: 'App versions', file: 'app-versions', columns: ['Version', 'Events', 'Sessions'], empty: 'No events in this range.', cells: counts },
  { key: 'environments', title: 'Environments', file: 'environments', columns: ['Environment', 'Events', 'Sessions'], empty: 'No events in this range.', cells: counts },
  { key: 'utmSources', title: 'Campaign sources', file: 'campaign-sources', columns: ['utm_source', 'Page loads', 'Sessions'], empty: 'No page loads with utm_source in this range.', cells: counts },
  { key: 'utmMediums', title: 'Campaign mediums', file: 'campaign-mediums', columns: ['utm_medium', 'Page loads', 'Sessions'], empty: 'No page loads with utm_medium in this range.', cells: counts },
  { key: 'utmCampaigns', title: 'Campaigns', file: 'campaigns', columns: ['utm_campaign', 'Page loads', 'Sessions'], empty: 'No page loads with utm_campaign in this range.', cells: counts },
  { key: 'countries', title: 'Countries', file: 'countries', columns: ['Country', 'Events', 'Sessions'], empty: 'No events in this range.', cells: (r) => [countryName(r.name), r.events, r.sessions] },
  { key: 'customEvents', title: 'Custom events', file: 'custom-events', columns: ['Event', 'Events', 'Sessions'], empty: 'No custom events in this range.', cells: counts },
];

let regions: Intl.DisplayNames | null | undefined;
/** A country's name in the reader's language (`DE` → Germany); the code itself where none is known. */
export function countryName(code: string): string {
  if (code === 'unknown') return 'Unknown';
  try {
    regions ??= new Intl.DisplayNames(undefined, { type: 'region' });
  } catch {
    regions = null;
  }
  try {
    return regions?.of(code) ?? code;
  } catch {
    return code;
  }
}

type Rating = 'good' | 'needs-improvement' | 'poor';

export const VITAL_ROWS = {
  label: { good: 'Good', 'needs-improvement': 'Needs improvement', poor: 'Poor' } as Record<Rating, string>,
  /** The rating of a p75 by the thresholds; null without one. */
  rating(name: VitalName, p75: number | null): Rating | null {
    if (p75 === null) return null;
    const [good, poor] = VITAL_THRESHOLDS[name];
    return p75 <= good ? 'good' : p75 > poor ? 'poor' : 'needs-improvement';
  },
};

/** A vital's value as people read it: CLS unitless with 3 decimals, the others in ms. */
export const vitalText = (name: VitalName, value: number): string =>
  name === 'CLS' ? value.toFixed(3) : `${fmt.format(value)} ms`;

/** A table cell with a page's p75 of one vital and its rating in words. */
export function vitalCells(name: VitalName, p75: number | null): HTMLElement {
  const rating = VITAL_ROWS.rating(name, p75);
  if (p75 === null || rating === null) return el('td', { text: '—' });
  return el('td', { class: `vital-cell vital-${rating}`, attrs: { 'data-vital': name } },
    el('span', { text: vitalText(name, p75) }), ' ', el('span', { class: 'vital-rating', text: VITAL_ROWS.label[rating] }));
}
