// Types of signup.mjs.
export function signUpByMailCode(
  post: (path: string, body: unknown) => Promise<{ status: number; text: string }>,
  waitForMail: (email: string) => Promise<{ text: string }>,
  account: { username: string; email: string; password: string },
): Promise<void>;
