// Alert settings from the environment. Kept apart from lib/config.ts for now; the variables:
//   SMTP_URL            smtp://user:pass@host:587 (STARTTLS when offered) or smtps://user:pass@host:465;
//                       unset: no e-mail (webhooks still work)
//   ALERT_FROM          the From of alert e-mails, required with SMTP_URL (`Watchtower <alerts@example.com>`)
//   SERVICE_PUBLIC_URL  the service's address as users reach it, for links in messages
//                       (default http://localhost:<PORT>)
//   ALERT_ALLOW_PRIVATE_WEBHOOKS  true: webhooks may post to loopback, private, link-local and other
//                       internal addresses (destination.ts), for a server that alerts internal services
import { boolean, ConfigError } from '../config.ts';

export interface AlertConfig {
  smtpUrl: string | null;
  alertFrom: string | null;
  publicUrl: string;
  /** ALERT_ALLOW_PRIVATE_WEBHOOKS: webhooks may post to internal addresses (lib/alerts/destination.ts). */
  allowPrivateWebhooks: boolean;
}

type Env = Record<string, string | undefined>;

export function loadAlertConfig(env: Env): AlertConfig {
  const get = (name: string) => (env[name]?.trim() ? env[name]!.trim() : null);
  const smtpUrl = get('SMTP_URL');
  if (smtpUrl !== null) {
    let u: URL;
    try {
      u = new URL(smtpUrl);
    } catch {
      throw new ConfigError('SMTP_URL', 'must be a URL like smtp://user:pass@host:587');
    }
    if ((u.protocol !== 'smtp:' && u.protocol !== 'smtps:') || u.hostname === '') throw new ConfigError('SMTP_URL', 'must be a URL like smtp://user:pass@host:587');
  }
  const alertFrom = get('ALERT_FROM');
  if (smtpUrl !== null && alertFrom === null) throw new ConfigError('ALERT_FROM', 'is required with SMTP_URL (the From of alert e-mails)');
  if (alertFrom !== null && (!/@/.test(alertFrom) || /[\r\n]/.test(alertFrom))) throw new ConfigError('ALERT_FROM', 'must be an e-mail address, optionally with a name: Watchtower <alerts@example.com>');
  let publicUrl = get('SERVICE_PUBLIC_URL') ?? `http://localhost:${get('PORT') ?? '3000'}`;
  try {
    const u = new URL(publicUrl);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
  } catch {
    throw new ConfigError('SERVICE_PUBLIC_URL', `must be an absolute http(s) URL (got "${publicUrl}")`);
  }
  publicUrl = publicUrl.replace(/\/+$/, '');
  return { smtpUrl, alertFrom, publicUrl, allowPrivateWebhooks: boolean(env, 'ALERT_ALLOW_PRIVATE_WEBHOOKS') };
}
