// Core Web Vitals as `performance` events (data: name, value, rating), from Google's web-vitals.
// Kept out of the core bundle: web-vitals alone is larger than the rest of the SDK.
import { onCLS, onFCP, onINP, onLCP, onTTFB, type Metric } from 'web-vitals';

export type Recorder = (type: string, data: Record<string, unknown>) => void;

/** The event data of one metric report. CLS is unitless; the others are ms. */
export function vitalData(m: Pick<Metric, 'name' | 'value' | 'rating' | 'id' | 'navigationType'>): Record<string, unknown> {
  return {
    name: m.name,
    value: m.name == 'CLS' ? Math.round(m.value * 10000) / 10000 : Math.round(m.value),
    rating: m.rating,
    metricId: m.id,
    navigationType: m.navigationType,
  };
}

/** Reports LCP, INP, CLS, FCP and TTFB through `record` (for the ESM build: pass `record` from the SDK). */
export function startVitals(record: Recorder): void {
  const report = (m: Metric) => record('performance', vitalData(m));
  for (const on of [onLCP, onINP, onCLS, onFCP, onTTFB]) on(report);
}
