/**
 * The fleet's pages (docs/cloud.md): one HTML document with four views (sign in, sign up, the
 * device list, add a device) and a small script, no framework. Served as strings from the
 * bundle. Accessible labels on every control, data-testid for the tests.
 */

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>KVM fleet</title>
<link rel="stylesheet" href="/ui/style.css">
<script src="/ui/app.js" defer></script>
</head>
<body>
<header><h1>KVM fleet</h1><span id="who" data-testid="who"></span>
<button type="button" id="logout" data-testid="logout" hidden>Sign out</button></header>
<main>
<p id="status" role="status" aria-live="polite" data-testid="status"></p>

<section id="view-signin" data-testid="view-signin" hidden>
<h2>Sign in</h2>
<form id="signin-form" novalidate>
<label for="si-username">Username</label>
<input id="si-username" name="username" autocomplete="username" required data-testid="signin-username">
<label for="si-password">Password</label>
<input id="si-password" name="password" type="password" autocomplete="current-password" required data-testid="signin-password">
<div id="si-totp-row" hidden>
<label for="si-totp">2FA code</label>
<input id="si-totp" name="totp" inputmode="numeric" autocomplete="one-time-code" maxlength="6" data-testid="signin-totp">
</div>
<button type="submit" data-testid="signin-submit">Sign in</button>
</form>
<p>No account? <a href="#signup" data-testid="goto-signup">Sign up</a></p>
</section>

<section id="view-signup" data-testid="view-signup" hidden>
<h2>Sign up</h2>
<form id="signup-form" novalidate>
<label for="su-username">Username</label>
<input id="su-username" name="username" autocomplete="username" maxlength="15" data-testid="signup-username" aria-describedby="su-username-err">
<span class="err" id="su-username-err" data-testid="signup-username-error"></span>
<label for="su-email">E-mail</label>
<input id="su-email" name="email" type="email" autocomplete="email" data-testid="signup-email" aria-describedby="su-email-err">
<span class="err" id="su-email-err" data-testid="signup-email-error"></span>
<button type="button" id="su-send-code" data-testid="signup-send-code">Send code</button>
<label for="su-code">E-mail code</label>
<input id="su-code" name="email_code" inputmode="numeric" maxlength="6" data-testid="signup-code" aria-describedby="su-code-err">
<span class="err" id="su-email_code-err" data-testid="signup-code-error"></span>
<label for="su-password">Password (6-10 characters)</label>
<input id="su-password" name="password" type="password" autocomplete="new-password" maxlength="10" data-testid="signup-password" aria-describedby="su-password-err">
<span class="err" id="su-password-err" data-testid="signup-password-error"></span>
<label for="su-password2">Password again</label>
<input id="su-password2" name="password2" type="password" autocomplete="new-password" maxlength="10" data-testid="signup-password2" aria-describedby="su-password2-err">
<span class="err" id="su-password2-err" data-testid="signup-password2-error"></span>
<label for="su-region">Region</label>
<select id="su-region" name="region" data-testid="signup-region">
<option value="">Choose…</option><option value="us">US</option><option value="eu">EU</option><option value="asia">Asia</option>
</select>
<span class="err" id="su-region-err" data-testid="signup-region-error"></span>
<label class="check"><input id="su-privacy" name="privacy" type="checkbox" data-testid="signup-privacy"> I accept the privacy policy</label>
<span class="err" id="su-privacy-err" data-testid="signup-privacy-error"></span>
<button type="submit" data-testid="signup-submit">Sign up</button>
</form>
<p>Have an account? <a href="#signin" data-testid="goto-signin">Sign in</a></p>
</section>

<section id="view-devices" data-testid="view-devices" hidden>
<h2>Devices</h2>
<form id="claim-form" novalidate>
<label for="claim-code">Add device: the 8-digit code it shows</label>
<input id="claim-code" name="code" inputmode="numeric" maxlength="9" autocomplete="off" data-testid="claim-code">
<button type="submit" data-testid="claim-submit">Add device</button>
</form>
<table data-testid="device-table">
<thead><tr><th scope="col">Status</th><th scope="col">Name</th><th scope="col">Model</th><th scope="col">Version</th><th scope="col">Last seen</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
<tbody id="device-rows"></tbody>
</table>
<p id="no-devices" data-testid="no-devices" hidden>No devices yet: enable cloud on a device, have it show a code, and add it here.</p>
</section>
</main>
</body>
</html>
`;

export const PAGE_CSS = `
:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0; }
header { display: flex; gap: 1rem; align-items: center; padding: .5rem 1rem; border-bottom: 1px solid #8884; }
header h1 { font-size: 1.2rem; margin: 0; flex: 1; }
main { max-width: 56rem; margin: 1rem auto; padding: 0 1rem; }
form { display: grid; gap: .35rem; max-width: 24rem; margin-bottom: 1rem; }
#claim-form { max-width: none; grid-template-columns: 1fr auto; align-items: end; }
#claim-form label { grid-column: 1 / -1; }
input, select, button { font: inherit; padding: .35rem .5rem; }
.err { color: #c33; font-size: .9em; min-height: 1em; }
.check { display: flex; gap: .4rem; align-items: center; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .4rem; border-bottom: 1px solid #8883; }
.dot { display: inline-block; width: .7rem; height: .7rem; border-radius: 50%; background: #999; }
.dot.on { background: #2a2; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
#status:empty { display: none; }
#status { padding: .4rem; border: 1px solid #8886; }
`;
