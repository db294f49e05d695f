// Cool-down: at most one notification per rule per cool-down. What triggers meanwhile is held and
// counted, and goes out as one message when the cool-down ends, so a burst of fifty new issues is
// one e-mail that says fifty, not fifty e-mails. Pure.
import type { Alert } from './evaluate.ts';

/** Alerts a held batch keeps to show (the first ones); the rest are only counted. */
export const BATCH_SAMPLES = 10;

export interface CooldownState {
  /** When the rule last sent (ms), or null. */
  lastSentAt: number | null;
  /** Held alerts: the first BATCH_SAMPLES, and how many in all. */
  held: Alert[];
  heldCount: number;
}

export interface Batch {
  alerts: Alert[];
  count: number;
}

export const idleCooldown = (): CooldownState => ({ lastSentAt: null, held: [], heldCount: 0 });

/**
 * Adds new alerts and decides: a batch to send now (everything held, once the cool-down since the
 * last send is over) or nothing (held for later). Call it with no alerts to release what was held.
 */
export function stepCooldown(state: CooldownState, alerts: readonly Alert[], now: number, cooldownMs: number): { state: CooldownState; batch: Batch | null } {
  const held = state.held.length < BATCH_SAMPLES ? [...state.held, ...alerts].slice(0, BATCH_SAMPLES) : state.held;
  const heldCount = state.heldCount + alerts.length;
  if (heldCount === 0) return { state, batch: null };
  if (state.lastSentAt !== null && now - state.lastSentAt < cooldownMs) {
    return { state: { lastSentAt: state.lastSentAt, held, heldCount }, batch: null };
  }
  return { state: { lastSentAt: now, held: [], heldCount: 0 }, batch: { alerts: held, count: heldCount } };
}
