// E-mail behind a small interface, so that alerting stays runtime-neutral: only smtp.ts knows
// nodemailer, and tests or embedders can hand in any other way of sending mail.

export interface MailMessage {
  to: string[];
  subject: string;
  text: string;
}

export interface Mailer {
  /** Resolves once the message is accepted for delivery; throws when it was not. */
  send(message: MailMessage): Promise<void>;
  /** Releases connections. */
  close?(): Promise<void> | void;
}
