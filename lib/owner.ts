// Who owns an ingested event (docs/api.md#ownership).

export interface OwnerInputs {
  /** The signed-in dashboard user resolved from the request, if any. */
  authUser: string | null;
  /** DEFAULT_INGEST_OWNER_USER_ID, if configured. */
  defaultOwner: string | null;
  /** The event's own userId (the same-origin demo tags events with the signed-in id). */
  eventUserId: unknown;
}

/** First available of: signed-in user, configured default owner, the event's own userId, none. */
export function resolveOwner({ authUser, defaultOwner, eventUserId }: OwnerInputs): string | null {
  if (authUser) return authUser;
  if (defaultOwner) return defaultOwner;
  if (typeof eventUserId === 'string' && eventUserId !== '') return eventUserId;
  return null;
}
