// Shapes shared by the SDK modules. Field names are the ingest fields of docs/api.md#event-fields, so
// lib/event.ts normalises them as sent.

export interface Options {
  /** Origin (and optional path prefix) of the Watchtower server. Default: the SDK script's own origin. */
  endpoint?: string;
  /**
   * The project's public ingest key. Sent as `?key=` on every request, never in a header: a custom
   * header would make every cross-origin batch wait for a CORS preflight (and beacons cannot set one).
   */
  key?: string;
  /**
   * Extra headers for each batch, asked for before it is sent: a same-origin app passes the signed-in
   * user's token (`{ authorization: 'Bearer …' }`). Cross-origin apps use `key` instead: a custom
   * header costs a CORS preflight. Beacons carry no headers, so with this set, events left at page
   * exit wait in storage for the next page rather than leave as a beacon.
   */
  headers?: () => Record<string, string> | Promise<Record<string, string>>;
  appName?: string;
  deployVersion?: string;
  /** The environment events come from (`production`, `staging`): sent as each event's `environment`. */
  environment?: string;
  /** Owner of the events; null = anonymous. Default: localStorage `service_idp_user_id` on the server's own origin. */
  userId?: string | null;
  /** Fraction of sessions that send anything, 0–1. Default 1. */
  sampleRate?: number;
  /** ms between the first queued event and its flush. Default 2000. */
  flushInterval?: number;
  /** Events per request, at most 50 (the default). */
  maxBatch?: number;
  /** Events kept while the server is unreachable; the oldest are dropped first. Default 250. */
  maxQueue?: number;
  /** Send nothing when the browser signals Global Privacy Control or Do Not Track. Default false. */
  respectDoNotTrack?: boolean;
  /** Automatic capture switches, all on by default. */
  pageload?: boolean;
  errors?: boolean;
  clicks?: boolean;
  /**
   * Remove the query string and fragment from reported URLs, all but the page URL's `utm_*`
   * parameters (the campaign the server reads). Default true.
   */
  stripQuery?: boolean;
  /** Breadcrumbs kept and attached to each error (clicks, navigations, failed requests, console errors), 0 = none. Default 30. */
  breadcrumbs?: number;
}

type Optional = 'key' | 'headers' | 'userId' | 'appName' | 'deployVersion' | 'environment';
export type Settings = Required<Omit<Options, Optional>> & Pick<Options, Optional>;

export type Data = Record<string, unknown>;

export interface SdkEvent {
  id: string;
  type: string;
  timestamp: string;
  sessionId?: string;
  deployVersion?: string;
  environment?: string;
  appName?: string;
  userId?: string;
  url?: string;
  route?: string;
  message?: string;
  /** Pageloads only: the referring site's origin, when another site (payload.ts referrerOrigin). */
  referrer?: string;
  data: Data;
}

/** The Web Storage methods the SDK uses, so tests can pass a Map-backed fake. */
export interface StorageLike {
  readonly length: number;
  key(index: number): string | null;
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}
