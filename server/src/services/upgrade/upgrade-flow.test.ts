import { Readable } from 'node:stream';
import { writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SILENT_LOGGER } from '../../log';
import { tempDataDir } from '../../test-helpers';
import { FlowState, INSTALL_TRANSITIONS, PACKAGE_TRANSITIONS } from './upgrade-flow';
import { UpgradeService } from './upgrade-service';

describe('the upgrade flow as checked state machines', () => {
  it('lets the package slot move as the map says and throws on an illegal move', () => {
    const phase = new FlowState('UpgradePackage', PACKAGE_TRANSITIONS, 'none');
    phase.set('downloading');
    phase.set('ready');
    phase.set('uploading');
    phase.set('none');
    expect(phase.value).toBe('none');
    // a transfer never jumps to another without settling first
    phase.set('downloading');
    expect(() => phase.set('uploading')).toThrow(
      'UpgradePackage: illegal state transition downloading -> uploading',
    );
    expect(phase.value).toBe('downloading');
  });

  it('ends the install in handed_over, from which nothing moves', () => {
    const phase = new FlowState('UpgradeInstall', INSTALL_TRANSITIONS, 'idle');
    expect(() => phase.set('handed_over')).toThrow(/idle -> handed_over/);
    phase.set('installing');
    phase.set('handed_over');
    expect(() => phase.set('idle')).toThrow(/handed_over -> idle/);
    expect(() => phase.set('installing')).toThrow(/handed_over -> installing/);
  });
});

function service(dataDir: string): UpgradeService {
  return new UpgradeService({
    dataDir,
    config: { channel_url: null, beta_channel_url: null },
    model: 'RM1',
    version: '0.1.0',
    log: SILENT_LOGGER,
    freeBytes: async () => 1 << 30,
  });
}

describe('UpgradeService phases', () => {
  it('an upload ends ready, a restart finds the package ready, a torn upload keeps the older one', async () => {
    const dataDir = await tempDataDir();
    const first = service(dataDir);
    expect(first.packagePhase.value).toBe('none');
    const uploading = first.upload('a.pkg', Readable.from([Buffer.from('package bytes')]));
    expect(first.uploads.busy).toBe(true);
    expect(await uploading).toEqual({ filename: 'a.pkg', size: 13 });
    expect(first.packagePhase.value).toBe('ready');
    expect(first.uploads.busy).toBe(false);

    // a restart: the package is still complete
    const second = service(dataDir);
    await expect.poll(() => second.packagePhase.value, { timeout: 5000 }).toBe('ready');
    // an upload cut short (over its Content-Length) settles back on the older package
    const torn = Object.assign(Readable.from([Buffer.from('more')]), { truncated: true });
    await expect(second.upload('b.pkg', torn)).rejects.toMatchObject({ status: 413 });
    expect(second.packagePhase.value).toBe('ready');
    expect(second.installPhase.value).toBe('idle');
    expect(second.status().in_progress).toBe(false);
  });

  it('a part file left by a restart is removed and the slot is empty', async () => {
    const dataDir = await tempDataDir();
    await mkdir(join(dataDir, 'upgrade'), { recursive: true });
    await writeFile(join(dataDir, 'upgrade', 'update.pkg.part'), 'half');
    const s = service(dataDir);
    expect(await s.downloadInfo()).toEqual({ size: 0, total_size: 0 });
    expect(s.packagePhase.value).toBe('none');
  });
});
