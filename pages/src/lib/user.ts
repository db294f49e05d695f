// The signed-in user as the pages know them: its own file, so that session.ts and the OIDC client
// it loads (oidc.ts) both use it without importing each other.
export interface Session {
  userId: string;
  email: string;
  displayName: string;
}
