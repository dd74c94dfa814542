/**
 * The password typed on /login while 2FA needs a code on /twofactor. Kept in memory only (never
 * in storage): a reload forgets it and /twofactor sends the user back to /login.
 */
let pendingPassword: string | null = null;

export function setPendingPassword(password: string): void {
  pendingPassword = password;
}

export function getPendingPassword(): string | null {
  return pendingPassword;
}

export function clearPendingPassword(): void {
  pendingPassword = null;
}
