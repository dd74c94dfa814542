/**
 * The fleet console's batch actions, staged rollouts and alerts end to end (issue 26, docs/cloud.md
 * "Tests and figures (part 2)"): a fleet replica on real PostgreSQL/NATS/coturn, its SMTP sink
 * and a webhook receiver, 10 simulated devices (fleet/src/sim/: real agents over TLS answering
 * the fleet's device calls and recording them) bound to the fleet's admin, Chromium signed in.
 *
 * - A batch power action on three rows selected in the devices list reaches each of them (the
 *   simulated devices record the ATX click) and the job page shows each device's result.
 * - A rollout of a signed package to the 10 devices, stage 1 = 30 % (3 devices, one of them made
 *   to come back on its old version): the job stops after stage 1, stage 2's 7 devices never get
 *   the package, the reason is on the job page, a `rollout_stopped` alert reaches the mail sink
 *   and the webhook (signature checked).
 * - A device stopped: one `device_offline` alert reaches the mail sink and the webhook, once.
 */
import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { FleetAlertTarget, FleetJob, FleetJobDetail } from '@kvm/protocol';
import { Browser } from './fixtures/browser';
import { byTestId } from './fixtures/console';
import {
  ADMIN,
  jobWhenDone,
  signInBrowser,
  startFleetWorld,
  type FleetWorld,
} from './fixtures/fleet';
import { makeFirmware, uploadFile } from './fixtures/fleet-http';
import { startSims, type SimHandle } from './fixtures/fleet-sims';

const OPS_MAIL = 'ops@e2e.test';
const NEW_VERSION = 'V9.9.1';

let w: FleetWorld;
let sims: SimHandle[];
let browser: Browser;
let page: Page;
let webhookSecret = '';
let work = '';

/** The webhook calls of `event` (parsed), each checked against its signature. */
function hooks(event: string): Array<Record<string, unknown>> {
  return w.cloud
    .webhook!.matching((b) => b['event'] === event)
    .map((c) => {
      const mac = createHmac('sha256', webhookSecret).update(c.body).digest('hex');
      expect(c.headers['x-fleet-signature']).toBe(`sha256=${mac}`);
      return JSON.parse(c.body) as Record<string, unknown>;
    });
}

/** The mails to the ops address whose subject matches `re`. */
function mails(re: RegExp): number {
  return w.cloud.smtp!.mails().filter((m) => m.to.includes(OPS_MAIL) && re.test(m.subject)).length;
}

describe('fleet: batch actions, a staged rollout that stops, alerts by mail and webhook', () => {
  beforeAll(async () => {
    w = await startFleetWorld({
      replicas: 1,
      webhook: true,
      // a device offline for 3 s raises its alert; the scanner looks twice a second
      config: { alerts: { offline_after_s: 3, scan_s: 0.5 } },
    });
    // sim 0 is first by name: stage 1 (30 % of 10 = 3 devices) holds it
    sims = await startSims(w, { count: 10, failUpgrade: [0], rebootMs: 1000 });
    for (const t of [
      { kind: 'email', target: OPS_MAIL, events: ['device_offline', 'rollout_stopped'] },
      {
        kind: 'webhook',
        target: w.cloud.webhook!.url,
        events: ['device_offline', 'rollout_stopped'],
      },
    ]) {
      const made = await w.admin.api<FleetAlertTarget>('POST', 'alerts/targets', t);
      if (made.kind === 'webhook') webhookSecret = made.secret ?? '';
    }
    expect(webhookSecret).not.toBe('');
    work = await mkdtemp(join(tmpdir(), 'kvm-e2e-fleet-jobs-'));
    browser = await Browser.launch({ ignoreHttpsErrors: true });
    await signInBrowser(browser, w.cloud.a.url, ADMIN);
    page = await browser.page();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await w?.cloud.dispose();
    if (work) await rm(work, { recursive: true, force: true });
  }, 60_000);

  it('a batch power action on three rows selected in the devices list reaches each, with per-device results', async () => {
    await page.goto(`${w.cloud.a.url}/devices`);
    await byTestId(page, 'view-devices').waitFor({ state: 'visible', timeout: 30_000 });
    const chosen = sims.slice(4, 7);
    for (const s of chosen) {
      const row = page.locator(`[data-testid="device-row"][data-device-id="${s.id}"]`);
      await row.waitFor({ state: 'visible', timeout: 20_000 });
      await row.locator('[data-testid="device-select"]').check();
    }
    await expect.poll(() => byTestId(page, 'batch-count').textContent()).toMatch(/\b3\b/);
    await byTestId(page, 'batch-action').selectOption('power');
    await byTestId(page, 'batch-run').click();
    await byTestId(page, 'confirm-ok').click();
    // the job's page, its rows' results
    await page.waitForURL(/\/jobs\/[^/]+$/, { timeout: 20_000 });
    const jobId = /\/jobs\/([^/?#]+)/.exec(page.url())![1]!;
    const detail = await jobWhenDone(w.admin, jobId, 60_000);
    expect(detail.job.state).toBe('done');
    expect(detail.devices.map((d) => d.device_id).sort()).toEqual(chosen.map((s) => s.id).sort());
    expect(detail.devices.every((d) => d.state === 'ok')).toBe(true);
    for (const s of chosen) expect(s.calls('POST', '/api/atx/click?button=power')).toBe(1);
    for (const s of sims.filter((x) => !chosen.includes(x))) {
      expect(s.calls('POST', '/api/atx/click?button=power')).toBe(0);
    }
    for (const s of chosen) {
      const state = page
        .locator(`[data-testid="job-device"][data-device-id="${s.id}"]`)
        .locator('[data-testid="job-state"]');
      await expect
        .poll(() => state.getAttribute('data-state', { timeout: 2_000 }).catch(() => null), {
          timeout: 20_000,
        })
        .toBe('ok');
    }
  }, 120_000);

  it('a rollout to 10 devices stops after stage 1 when one fails its health check; stage 2 untouched; alert sent', async () => {
    const pkg = await uploadFile(
      w.admin,
      'package',
      'fw.tar',
      await makeFirmware(work, NEW_VERSION),
    );
    expect(pkg.version).toBe(NEW_VERSION);

    const started = await w.admin.api<{ job: FleetJob }>('POST', 'rollouts', {
      file_id: pkg.id,
      devices: sims.map((s) => s.id),
      first_stage_percent: 30,
      max_failures: 0,
      health_timeout_s: 60,
    });
    let detail: FleetJobDetail = await jobWhenDone(w.admin, started.job.id, 120_000);
    expect(detail.job.state).toBe('stopped');
    // stopped: no new device starts, the ones running finish
    await expect
      .poll(
        async () => {
          detail = await w.admin.api<FleetJobDetail>('GET', `jobs/${started.job.id}`);
          return detail.devices.filter((d) => d.state === 'running').length;
        },
        { timeout: 60_000, interval: 500 },
      )
      .toBe(0);
    expect(detail.job.stage).toBe(1);
    expect(detail.job.reason).toBeTruthy();
    const stage1 = detail.devices.filter((d) => d.stage === 1);
    const stage2 = detail.devices.filter((d) => d.stage === 2);
    expect(stage1.map((d) => d.device_id)).toContain(sims[0]!.id);
    expect(stage1).toHaveLength(3);
    expect(stage2).toHaveLength(7);
    expect(stage1.find((d) => d.device_id === sims[0]!.id)?.state).toBe('failed');
    for (const d of stage1.filter((x) => x.device_id !== sims[0]!.id)) expect(d.state).toBe('ok');
    // stage 2: never sent the package, still on the old version
    for (const d of stage2) {
      expect(['pending', 'skipped']).toContain(d.state);
      const sim = sims.find((s) => s.id === d.device_id)!;
      expect(sim.calls('POST', '/api/upgrade/upload')).toBe(0);
      expect(sim.version()).not.toBe(NEW_VERSION);
    }
    // the job's page says why
    await page.goto(`${w.cloud.a.url}/jobs/${started.job.id}`);
    await expect
      .poll(() => byTestId(page, 'job-reason').textContent(), { timeout: 20_000 })
      .toContain(detail.job.reason!);
    // the alert, by mail and by webhook
    const hook = await w.cloud.webhook!.waitFor((b) => b['event'] === 'rollout_stopped', 30_000);
    expect(JSON.parse(hook.body)).toMatchObject({ job: { id: started.job.id } });
    expect(hooks('rollout_stopped')).toHaveLength(1);
    // the mail's subject is the alert's text, which names the rollout and why it stopped
    await expect.poll(() => mails(/^Rollout .* stopped/), { timeout: 30_000 }).toBe(1);
    expect(
      w.cloud.smtp!.mails().filter((m) => /^Rollout .* stopped/.test(m.subject))[0]?.subject,
    ).toContain(detail.job.reason!);
  }, 240_000);

  it('a device stopped: one device_offline alert by mail and by webhook, once', async () => {
    const gone = sims[9]!;
    const t0 = Date.now();
    await gone.stop();
    const hook = await w.cloud.webhook!.waitFor(
      (b) =>
        b['event'] === 'device_offline' &&
        (b['device'] as { id?: string } | undefined)?.id === gone.id,
      60_000,
    );
    console.log(`fleet e2e: device_offline webhook ${Date.now() - t0} ms after the device stopped`);
    expect(JSON.parse(hook.body)).toMatchObject({ device: { id: gone.id, name: gone.name } });
    await expect
      .poll(() => mails(new RegExp(gone.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))), {
        timeout: 30_000,
      })
      .toBe(1);
    // several scans later: still one of each
    await new Promise((r) => setTimeout(r, 4000));
    const offline = hooks('device_offline').filter(
      (b) => (b['device'] as { id?: string } | undefined)?.id === gone.id,
    );
    expect(offline).toHaveLength(1);
    expect(mails(new RegExp(gone.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))).toBe(1);
  }, 120_000);
});
