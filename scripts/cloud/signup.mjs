// Sign-up through the e-mail code (SPEC 5), as `npm run cloud -- --sim` and the fleet's test-kit
// do it: ask for the code, read it from the sink's mail, send the form. `post(path, body)` answers
// `{ status, text }` for a fleet path ('signup/email-code'); `waitForMail(email)` the mail sent.
export async function signUpByMailCode(post, waitForMail, { username, email, password }) {
  const sent = await post('signup/email-code', { email });
  if (sent.status !== 200) throw new Error(`email-code: ${sent.text}`);
  const mail = await waitForMail(email);
  const code = /\b(\d{6})\b/.exec(mail.text)?.[1];
  const made = await post('signup', {
    username,
    email,
    email_code: code,
    password,
    password2: password,
    privacy: true,
    region: 'eu',
  });
  if (made.status !== 200) throw new Error(`signup: ${made.text}`);
}
