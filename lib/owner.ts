// Who owns an ingested event (docs/api.md#ownership).

export interface OwnerInputs {
  /** The signed-in dashboard user resolved from the request (a verified token, or the trusted header). */
  authUser: string | null;
  /** The owner of the project whose ingest key the request carried, if any. */
  projectOwner?: string | null;
  /** DEFAULT_INGEST_OWNER_USER_ID, if configured. */
  defaultOwner: string | null;
  /** The event's own userId: anyone can write any string there. */
  eventUserId: unknown;
  /**
   * Header-trust development mode (no identity provider, or SERVICE_TRUST_USER_HEADER): only then
   * may the event's userId name its owner. Default false.
   */
  trustEventUserId?: boolean;
}

/**
 * First available of: signed-in user, project key's owner, configured default owner, the event's
 * own userId (development mode only), none. With a provider, an event's userId is only a field:
 * neither it nor the Origin header can be trusted, while tokens and keys are checked.
 */
export function resolveOwner({ authUser, projectOwner, defaultOwner, eventUserId, trustEventUserId = false }: OwnerInputs): string | null {
  if (authUser) return authUser;
  if (projectOwner) return projectOwner;
  if (defaultOwner) return defaultOwner;
  if (trustEventUserId && typeof eventUserId === 'string' && eventUserId !== '') return eventUserId;
  return null;
}
