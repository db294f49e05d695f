// Sessions, sampling and privacy signals.

export const SESSION_KEY = 'watchtower_session';
export const SESSION_IDLE_MS = 30 * 60 * 1000;

/** The session to use at `now`: the stored one unless idle for 30 minutes or more. */
export function nextSession(stored: string | null, now: number, newId: () => string): { id: string; at: number } {
  try {
    const s = JSON.parse(stored ?? '') as { id?: unknown; at?: unknown };
    if (typeof s.id == 'string' && typeof s.at == 'number' && now - s.at < SESSION_IDLE_MS && now >= s.at) return { id: s.id, at: now };
  } catch {
    // Absent or unreadable: start a new session.
  }
  return { id: newId(), at: now };
}

/**
 * Whether a session is sampled in. Derived from the id's random tail, so every page of a session
 * decides the same way and a session is either recorded whole or not at all.
 */
export function sampled(sessionId: string, rate: number): boolean {
  if (!(rate < 1)) return true;
  if (!(rate > 0)) return false;
  const tail = parseInt(sessionId.replace(/-/g, '').slice(-8), 16);
  return Number.isFinite(tail) ? tail / 2 ** 32 < rate : true;
}

/** Global Privacy Control or Do Not Track is on. */
export function doNotTrack(nav: { doNotTrack?: string | null; globalPrivacyControl?: boolean }, win?: { doNotTrack?: string | null }): boolean {
  return nav.globalPrivacyControl === true || nav.doNotTrack == '1' || nav.doNotTrack == 'yes' || win?.doNotTrack == '1';
}
