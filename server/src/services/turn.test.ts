import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildConfig } from '../config';
import type { Logger } from '../log';
import { loadConfigDefaults } from '../paths';
import { tempDataDir } from '../test-helpers';
import { loadTurn, TurnService } from './turn';

function recorder(): Logger & { warnings: object[] } {
  const warnings: object[] = [];
  const none = (): void => undefined;
  return { warnings, info: none, debug: none, error: none, warn: (obj) => warnings.push(obj) };
}

async function configWith(content: string | null): Promise<ReturnType<typeof buildConfig>> {
  const dir = await tempDataDir();
  const file = join(dir, 'turn.json');
  if (content === 'DIR') await mkdir(file);
  else if (content !== null) await writeFile(file, content);
  return buildConfig(
    { data_dir: dir, target: 'testbed', webrtc: { stun_url: null, turn_file: file } },
    loadConfigDefaults(),
  );
}

describe('loadTurn', () => {
  it('reads GL format: a dict of uris becomes a list', async () => {
    const log = recorder();
    const turn = await loadTurn(
      await configWith(
        JSON.stringify({ username: 'u', password: 'p', ttl: 60, uris: { a: 'turn:relay:3478' } }),
      ),
      log,
    );
    expect(turn).toEqual({ username: 'u', password: 'p', ttl: 60, uris: ['turn:relay:3478'] });
    expect(log.warnings).toEqual([]);
  });

  it.each([
    ['missing', null, 'missing'],
    ['unreadable', 'DIR', 'unreadable'],
    ['not JSON', '{nope', 'not valid JSON'],
    ['not an object', '[]', 'not a JSON object'],
    ['without a usable uri', JSON.stringify({ uris: ['http://x'] }), 'no stun:/turn: URI in uris'],
  ])('a TURN file %s means no TURN, with a warning', async (_name, content, reason) => {
    const log = recorder();
    const turn = await loadTurn(await configWith(content), log);
    expect(turn.uris).toEqual([]);
    expect(log.warnings).toEqual([expect.objectContaining({ reason })]);
  });
});

describe('TurnService and the fleet', () => {
  it("merges the fleet's TURN credentials and sends the turn event on each change", async () => {
    const dir = await tempDataDir();
    const turn = await TurnService.load(
      buildConfig(
        { data_dir: dir, target: 'testbed', webrtc: { stun_url: 'stun:stun.example:3478' } },
        loadConfigDefaults(),
      ),
    );
    const events: unknown[] = [];
    const off = turn.provider().subscribe((e) => events.push(e));
    const fleet = { uris: ['turn:relay:3478'], username: 'u', password: 'p', ttl: 60 };
    turn.setFleet(fleet);
    turn.setFleet({ ...fleet });
    expect(turn.state()).toEqual({
      username: 'u',
      password: 'p',
      ttl: 60,
      uris: ['turn:relay:3478', 'stun:stun.example:3478'],
    });
    expect(turn.iceServers()[0]).toEqual({
      urls: 'turn:relay:3478',
      username: 'u',
      credential: 'p',
    });
    turn.setFleet(null);
    expect(turn.state().uris).toEqual(['stun:stun.example:3478']);
    expect(events.map((e) => (e as { event: { uris: string[] } }).event.uris)).toEqual([
      ['turn:relay:3478', 'stun:stun.example:3478'],
      ['stun:stun.example:3478'],
    ]);
    off();
  });
});
