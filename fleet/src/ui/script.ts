/**
 * The pages' script (plain browser JavaScript, served as /ui/app.js). Talks JSON to the fleet's
 * API with the session cookie; every state-changing call is a JSON POST/DELETE from this origin
 * (the fleet checks Origin), nothing else. Text goes in with textContent, never innerHTML.
 */
/**
 * Where to go after signing in: `?next=` when it is a console path of this fleet (`/d/<id>/...`),
 * never another origin or page (no open redirect); else null. Runs in the page as it is here.
 */
export function safeNext(search: string): string | null {
  const next = new URLSearchParams(search).get('next');
  if (!next || !/^\/d\/[A-Za-z0-9_-]{1,64}(\/[^\\]*)?$/.test(next) || next.indexOf('//') >= 0) {
    return null;
  }
  return next;
}

/**
 * A device's bind link (`/?code=<8 digits>#devices`, the device's `get_bind_link`): the code to
 * put in "Add device" (kept through signing in, since the hash change keeps the query), or null.
 */
export function bindCodeOf(search: string): string | null {
  const code = new URLSearchParams(search).get('code');
  return code && /^\d{8}$/.test(code) ? code : null;
}

export const PAGE_JS = String.raw`'use strict';
(function () {
  var API = '/cloud-basic/v1';
  var safeNext = ${safeNext.toString()};
  var bindCodeOf = ${bindCodeOf.toString()};
  function goNext() {
    var next = safeNext(location.search);
    if (next) location.assign(next);
    return !!next;
  }
  var FIELD_TEXT = {
    username_required: 'Please enter a username',
    username_invalid: '5-15 characters: letters, digits, _ . - ; begins with a letter or digit',
    username_taken: 'This username is taken',
    email_invalid: 'Please enter a valid e-mail address',
    email_taken: 'An account with this e-mail exists already',
    email_code_invalid: 'Wrong or expired e-mail code',
    privacy_required: 'Please accept the privacy policy',
    password_required: 'Please enter a password',
    password_length: 'The password has 6-10 characters',
    password_mismatch: 'Entered passwords differ',
    region_required: 'Please choose a region'
  };
  var $ = function (id) { return document.getElementById(id); };
  var me = null;

  function status(text) { $('status').textContent = text || ''; }

  function call(method, path, body) {
    var init = { method: method, credentials: 'same-origin', headers: { accept: 'application/json' } };
    if (body !== undefined) {
      init.headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    return fetch(API + path, init).then(function (r) {
      return r.json().catch(function () { return null; }).then(function (j) {
        if (r.ok && j && j.ok) return j.result;
        var res = (j && j.result) || {};
        var err = new Error(res.error_msg || ('HTTP ' + r.status));
        err.status = r.status;
        err.result = res;
        throw err;
      });
    });
  }

  function show(view) {
    ['signin', 'signup', 'devices'].forEach(function (v) {
      $('view-' + v).hidden = v !== view;
    });
    $('logout').hidden = !me;
    $('who').textContent = me ? me.username : '';
  }

  function route() {
    status('');
    if (me) {
      show('devices');
      var linked = bindCodeOf(location.search);
      if (linked && !$('claim-code').value) $('claim-code').value = linked;
      loadDevices();
      return;
    }
    show(location.hash === '#signup' ? 'signup' : 'signin');
  }

  function clearFieldErrors() {
    var spans = document.querySelectorAll('#signup-form .err');
    for (var i = 0; i < spans.length; i++) spans[i].textContent = '';
  }

  function showFieldErrors(fields) {
    Object.keys(fields || {}).forEach(function (k) {
      var el = $('su-' + k + '-err');
      if (el) el.textContent = FIELD_TEXT[fields[k]] || fields[k];
    });
  }

  function fmtTime(ms) { return ms ? new Date(ms).toLocaleString() : '—'; }

  function loadDevices() {
    return call('GET', '/devices').then(function (r) {
      var tbody = $('device-rows');
      tbody.textContent = '';
      $('no-devices').hidden = r.devices.length > 0;
      r.devices.forEach(function (d) {
        var tr = document.createElement('tr');
        tr.setAttribute('data-testid', 'device-row');
        tr.setAttribute('data-device-id', d.id);
        var st = document.createElement('td');
        var dot = document.createElement('span');
        dot.className = 'dot' + (d.online ? ' on' : '');
        dot.setAttribute('role', 'img');
        dot.setAttribute('aria-label', d.online ? 'online' : 'offline');
        dot.setAttribute('data-testid', 'device-online');
        dot.setAttribute('data-online', d.online ? 'true' : 'false');
        st.appendChild(dot);
        tr.appendChild(st);
        [d.name, d.model, d.version, fmtTime(d.last_seen)].forEach(function (t, i) {
          var td = document.createElement('td');
          td.textContent = t;
          if (i === 0) td.setAttribute('data-testid', 'device-name');
          tr.appendChild(td);
        });
        var act = document.createElement('td');
        var open = document.createElement('a');
        open.href = '/d/' + encodeURIComponent(d.id) + '/';
        open.target = '_blank';
        open.rel = 'noopener';
        open.textContent = 'Open console';
        open.setAttribute('data-testid', 'device-open');
        var un = document.createElement('button');
        un.type = 'button';
        un.textContent = 'Unbind';
        un.setAttribute('aria-label', 'Unbind ' + d.name);
        un.setAttribute('data-testid', 'device-unbind');
        un.addEventListener('click', function () {
          if (!window.confirm('Unbind ' + d.name + '? The device forgets this fleet.')) return;
          call('DELETE', '/devices/' + encodeURIComponent(d.id)).then(function () {
            status(d.name + ' was unbound');
            return loadDevices();
          }).catch(function (e) { status(e.message); });
        });
        act.appendChild(open);
        act.appendChild(document.createTextNode(' '));
        act.appendChild(un);
        tr.appendChild(act);
        tbody.appendChild(tr);
      });
    }).catch(function (e) {
      if (e.status === 401) { me = null; route(); } else status(e.message);
    });
  }

  $('signin-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
    var body = { username: $('si-username').value, password: $('si-password').value };
    if ($('si-totp').value) body.totp = $('si-totp').value;
    call('POST', '/login', body).then(function (r) {
      me = r;
      if (goNext()) return;
      $('si-password').value = '';
      $('si-totp').value = '';
      $('si-totp-row').hidden = true;
      location.hash = '#devices';
      route();
    }).catch(function (e) {
      if (e.result && e.result.totp_required) {
        $('si-totp-row').hidden = false;
        $('si-totp').focus();
        status('Enter the 2FA code of your authenticator');
      } else status(e.message);
    });
  });

  $('su-send-code').addEventListener('click', function () {
    clearFieldErrors();
    call('POST', '/signup/email-code', { email: $('su-email').value }).then(function () {
      status('A code was sent to ' + $('su-email').value);
    }).catch(function (e) {
      showFieldErrors(e.result && e.result.fields);
      status(e.message);
    });
  });

  $('signup-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
    clearFieldErrors();
    var body = {
      username: $('su-username').value,
      email: $('su-email').value,
      email_code: $('su-code').value,
      password: $('su-password').value,
      password2: $('su-password2').value,
      privacy: $('su-privacy').checked,
      region: $('su-region').value
    };
    call('POST', '/signup', body).then(function () {
      $('si-username').value = body.username;
      location.hash = '#signin';
      route();
      status('Account created: sign in');
    }).catch(function (e) {
      showFieldErrors(e.result && e.result.fields);
      status(e.message);
    });
  });

  $('claim-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
    call('POST', '/devices/claim', { code: $('claim-code').value }).then(function (r) {
      $('claim-code').value = '';
      status(r.name + ' is being added');
      // the device collects its binding on its next poll: look again shortly
      setTimeout(loadDevices, 1500);
      return loadDevices();
    }).catch(function (e) { status(e.message); });
  });

  $('logout').addEventListener('click', function () {
    call('POST', '/logout', {}).finally(function () { me = null; location.hash = '#signin'; route(); });
  });

  window.addEventListener('hashchange', route);
  call('GET', '/me').then(function (r) { me = r; }).catch(function () { me = null; }).then(function () {
    if (!(me && goNext())) route();
  });
  setInterval(function () { if (me && !document.hidden) loadDevices(); }, 10000);
})();
`;
