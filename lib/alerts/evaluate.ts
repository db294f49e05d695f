// Pure rule evaluation: a rule and what happened (an issue transition, recent error counts, recent
// page-load durations) → an alert, or null. No clocks, no I/O; cool-downs are cooldown.ts's.
import type { Issue, Transition } from '../issues/state.ts';
import { percentile } from '../stats.ts';
import type { AlertRule } from './rules.ts';

/** The part of an issue a message shows. */
export interface IssueSummary {
  id: string;
  title: string;
  culprit: string | null;
  project: string | null;
  count: number;
  firstSeen: string;
  lastSeen: string;
  /** The latest version it was seen in. */
  version: string | null;
}

export type Alert =
  | { kind: 'new_issue'; at: number; issue: IssueSummary }
  | { kind: 'regression'; at: number; issue: IssueSummary }
  | { kind: 'error_spike'; at: number; project: string | null; errors: number; threshold: number; baselinePer5Minutes: number }
  | { kind: 'slow_route'; at: number; project: string | null; route: string; p95: number; samples: number; threshold: number };

/** error_spike: the last 5 minutes must exceed SPIKE_FACTOR × the previous hour's average per 5 minutes, as well as the threshold. */
export const SPIKE_FACTOR = 3;
export const SPIKE_WINDOW_MS = 5 * 60 * 1000;
export const SPIKE_BASELINE_MS = 60 * 60 * 1000;
/** slow_route: p95 over this window, and only from this many page loads on (one slow load is not a slow route). */
export const SLOW_ROUTE_WINDOW_MS = 15 * 60 * 1000;
export const SLOW_ROUTE_MIN_SAMPLES = 5;

/** Whether a rule covers an owner and project (a rule without a project covers them all). */
export const ruleCovers = (rule: AlertRule, owner: string | null, project: string | null): boolean =>
  rule.enabled && rule.userId === owner && (rule.project === null || rule.project === project);

export function summarise(issue: Issue): IssueSummary {
  return {
    id: issue.id,
    title: issue.title,
    culprit: issue.culprit,
    project: issue.project,
    count: issue.count,
    firstSeen: issue.firstSeen,
    lastSeen: issue.lastSeen,
    version: issue.versions.last,
  };
}

/**
 * new_issue and regression rules: the transition applyEvent returned for an issue, with the
 * environment of the event behind it. A rule with an environment hears regressions of events of that
 * environment, and as new issues the issue's first event there (`firstInEnvironment`); a rule without
 * one ignores those first events (it heard the issue's first event).
 */
export function evaluateTransition(rule: AlertRule, issue: Issue, transition: Transition | null, at: number, event: { environment?: string | null; firstInEnvironment?: boolean } = {}): Alert | null {
  if (transition === null || !ruleCovers(rule, issue.owner, issue.project)) return null;
  const watched = rule.environment ?? null;
  if (watched === null ? event.firstInEnvironment === true : event.environment !== watched) return null;
  if (watched !== null && transition === 'new' && event.firstInEnvironment !== true) return null;
  if (rule.kind === 'new_issue' && transition === 'new') return { kind: 'new_issue', at, issue: summarise(issue) };
  if (rule.kind === 'regression' && transition === 'regression') return { kind: 'regression', at, issue: summarise(issue) };
  return null;
}

export interface ErrorCounts {
  /** Errors received in the last SPIKE_WINDOW_MS. */
  last5Minutes: number;
  /** Errors received in the SPIKE_BASELINE_MS before that. */
  previousHour: number;
}

/**
 * error_spike: more errors in the last 5 minutes than the rule's threshold, and more than
 * SPIKE_FACTOR times the previous hour's average per 5 minutes (so a steady high rate, which the
 * threshold alone would report every cool-down, is not a spike; with no errors in the previous hour,
 * the threshold decides).
 */
export function evaluateErrorSpike(rule: AlertRule, counts: ErrorCounts, at: number): Alert | null {
  if (rule.kind !== 'error_spike' || !rule.enabled || rule.threshold === null) return null;
  const baseline = counts.previousHour / (SPIKE_BASELINE_MS / SPIKE_WINDOW_MS);
  if (counts.last5Minutes <= rule.threshold || counts.last5Minutes <= SPIKE_FACTOR * baseline) return null;
  return { kind: 'error_spike', at, project: rule.project, errors: counts.last5Minutes, threshold: rule.threshold, baselinePer5Minutes: Math.round(baseline * 100) / 100 };
}

/**
 * slow_route: a route whose page-load p95 (nearest rank, as in statistics) over the last 15 minutes
 * is above the threshold, from at least SLOW_ROUTE_MIN_SAMPLES loads. With several, the slowest.
 * `durations`: page-load durations (ms) per route key in that window.
 */
export function evaluateSlowRoute(rule: AlertRule, durations: Record<string, readonly number[]>, at: number): Alert | null {
  if (rule.kind !== 'slow_route' || !rule.enabled || rule.threshold === null) return null;
  let worst: Alert | null = null;
  for (const [route, values] of Object.entries(durations)) {
    if (rule.route !== null && route !== rule.route) continue;
    if (values.length < SLOW_ROUTE_MIN_SAMPLES) continue;
    const p95 = percentile([...values].sort((a, b) => a - b), 95);
    if (p95 > rule.threshold && (worst === null || (worst.kind === 'slow_route' && p95 > worst.p95))) {
      worst = { kind: 'slow_route', at, project: rule.project, route, p95, samples: values.length, threshold: rule.threshold };
    }
  }
  return worst;
}
