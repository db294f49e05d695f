// The application's users (Store.upsertUser, Store.getUser): one row per identity-provider user.
import type postgres from 'postgres';
import { appUser, type AppUser, type Store, type UserSync } from '../types.ts';
import { col, type Guard } from './sql.ts';

export function users(sql: postgres.Sql, guard: Guard): Pick<Store, 'upsertUser' | 'getUser'> {
  return {
    async upsertUser(u: UserSync, now) {
      const user = appUser(u, now);
      await guard('upsertUser', () => sql`
        insert into watchtower_users (idp_user_id, email, display_name, last_seen_at)
        values (${col(user.idp_user_id)}, ${col(user.email)}, ${col(user.display_name)}, ${user.last_seen_at}::timestamptz)
        on conflict (idp_user_id) do update
          set email = excluded.email, display_name = excluded.display_name, last_seen_at = excluded.last_seen_at`);
      return user;
    },

    async getUser(idpUserId) {
      const rows = await guard('getUser', () => sql<{ idp_user_id: string; email: string; display_name: string; last_seen_at: Date }[]>`
        select idp_user_id, email, display_name, last_seen_at from watchtower_users where idp_user_id = ${col(idpUserId)}`);
      if (!rows.length) return null;
      const r = rows[0];
      const user: AppUser = { idp_user_id: r.idp_user_id, email: r.email, display_name: r.display_name, last_seen_at: r.last_seen_at.toISOString() };
      return user;
    },
  };
}
