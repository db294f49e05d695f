// The real Mailer: SMTP through nodemailer. nodemailer is imported on the first message, so a
// service without SMTP_URL never loads it, and nothing else in lib/alerts depends on it.
import type { Mailer, MailMessage } from './mailer.ts';

export interface SmtpOptions {
  /** `smtp://user:pass@host:587` (STARTTLS when the server offers it) or `smtps://…:465` (TLS). */
  url: string;
  /** The From header, e.g. `Watchtower <alerts@example.com>`. */
  from: string;
}

/** Connect, greeting and idle limits, so that a dead server fails an attempt instead of hanging it. */
const TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

export function createSmtpMailer(options: SmtpOptions): Mailer {
  type Transport = { sendMail(m: Record<string, unknown>): Promise<unknown>; close(): void };
  let transport: Promise<Transport> | null = null;
  const open = () =>
    (transport ??= import('nodemailer').then((nodemailer) => nodemailer.createTransport({ url: options.url, ...TIMEOUTS }) as unknown as Transport));
  return {
    async send(message: MailMessage) {
      const t = await open();
      await t.sendMail({ from: options.from, to: message.to, subject: message.subject, text: message.text });
    },
    async close() {
      if (transport) (await transport).close();
      transport = null;
    },
  };
}
