/**
 * Outgoing mail (sign-up codes) over SMTP with nodemailer; bounded in time so a dead mail server
 * fails the request rather than holding it.
 */
import nodemailer, { type Transporter } from 'nodemailer';
import type { FleetConfig } from '../context';

export interface Mailer {
  send(to: string, subject: string, text: string): Promise<void>;
  close(): void;
}

export class SmtpMailer implements Mailer {
  private readonly transport: Transporter;

  constructor(private readonly smtp: FleetConfig['smtp']) {
    this.transport = nodemailer.createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: smtp.secure,
      ...(smtp.user ? { auth: { user: smtp.user, pass: smtp.pass ?? '' } } : {}),
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 15_000,
    });
  }

  async send(to: string, subject: string, text: string): Promise<void> {
    await this.transport.sendMail({ from: this.smtp.from, to, subject, text });
  }

  close(): void {
    this.transport.close();
  }
}
