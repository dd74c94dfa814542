/**
 * DMTF Redfish as kvmd serves it (api/redfish/*.py; wire-protocol.md 1.8): the service root,
 * the computer system `0` with its PowerState from the ATX power LED and
 * `ComputerSystem.Reset`, and the virtual media drive under the `BMC` manager. Served at
 * `/redfish/v1` (where PiKVM's nginx sends Redfish tools) and `/api/redfish/v1`. Answers are
 * bare Redfish JSON (no kvmd envelope); kvmd's errors stay in its envelope (`HttpError`, 400).
 * The service root is public, as kvmd's and as Redfish requires; everything else needs
 * credentials (Redfish tools send Basic).
 */
import { basename } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { defaultHost } from '../context';
import { BadRequestError } from '../errors';
import type { AtxService } from '../services/atx/atx-service';
import type { MsdService } from '../services/msd/msd-service';
import { storedName } from '../services/msd/image-names';
import { bool } from '../validators';

/** kvmd's plain HTTP error, by its own wire name. */
export class HttpError extends BadRequestError {}

export const RESET_TYPES = [
  'On',
  'ForceOff',
  'GracefulShutdown',
  'ForceRestart',
  'ForceOn',
  'PushPowerButton',
] as const;
type ResetType = (typeof RESET_TYPES)[number];

const PREFIXES = ['/redfish/v1', '/api/redfish/v1'];
const MSD = '/redfish/v1/Managers/BMC/VirtualMedia/MSD';

/** Bare JSON: a Redfish body carries no kvmd envelope (it has no `ok`, so it is sent raw). */
function json(reply: FastifyReply, body: object): FastifyReply {
  return reply.header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(body));
}

/** kvmd's server ids: `0` is the device itself; `SwitchPort<n>` ports of a switch we lack. */
function systemId(request: FastifyRequest): string {
  const sid = ((request.params as { sid?: string }).sid ?? '').trim();
  if (sid === '0') return sid;
  if (/^SwitchPort\d+$/.test(sid)) throw new HttpError('Non-existent Switch Port ID');
  throw new HttpError('Missing or invalid Server ID');
}

function bodyOf(request: FastifyRequest): Record<string, unknown> | null {
  const b = request.body;
  return b !== null && typeof b === 'object' && !Array.isArray(b)
    ? (b as Record<string, unknown>)
    : null;
}

export function redfishRoutes(
  app: FastifyInstance,
  deps: { atx: AtxService; msd: MsdService },
): void {
  const { atx, msd } = deps;
  const act: Record<ResetType, () => Promise<void>> = {
    On: () => atx.power('on', false),
    ForceOff: () => atx.power('off_hard', false),
    GracefulShutdown: () => atx.power('off', false),
    ForceRestart: () => atx.power('reset_hard', false),
    ForceOn: () => atx.power('on', false),
    PushPowerButton: () => atx.click('power', false),
  };

  for (const p of PREFIXES) {
    app.get(p, { config: { public: true } }, async (_request, reply) =>
      json(reply, {
        '@odata.id': '/redfish/v1',
        '@odata.type': '#ServiceRoot.v1_6_0.ServiceRoot',
        Id: 'RootService',
        Name: 'Root Service',
        RedfishVersion: '1.6.0',
        Systems: { '@odata.id': '/redfish/v1/Systems' },
        Managers: { '@odata.id': '/redfish/v1/Managers' },
      }),
    );

    app.get(`${p}/Systems`, async (_request, reply) => {
      const members = atx.getState().enabled ? ['0'] : [];
      return json(reply, {
        '@odata.id': '/redfish/v1/Systems',
        '@odata.type': '#ComputerSystemCollection.ComputerSystemCollection',
        Name: 'Computer System Collection',
        Members: members.map((m) => ({ '@odata.id': `/redfish/v1/Systems/${m}` })),
        'Members@odata.count': members.length,
      });
    });

    app.get(`${p}/Systems/:sid`, async (request, reply) => {
      const sid = systemId(request);
      return json(reply, {
        '@odata.id': `/redfish/v1/Systems/${sid}`,
        '@odata.type': '#ComputerSystem.v1_10_0.ComputerSystem',
        Id: sid,
        HostName: defaultHost().replace(/[^a-zA-Z0-9_.]/g, '_'),
        PowerState: atx.getState().leds.power ? 'On' : 'Off',
        Actions: {
          '#ComputerSystem.Reset': {
            'ResetType@Redfish.AllowableValues': [...RESET_TYPES],
            target: `/redfish/v1/Systems/${sid}/Actions/ComputerSystem.Reset`,
          },
          '#ComputerSystem.SetDefaultBootOrder': {
            target: `/redfish/v1/Systems/${sid}/Actions/ComputerSystem.SetDefaultBootOrder`,
          },
        },
        Boot: { BootSourceOverrideEnabled: 'Disabled', BootSourceOverrideTarget: null },
      });
    });

    // kvmd accepts and ignores a boot override (tools PATCH it before a reset): nothing to set.
    app.patch(`${p}/Systems/:sid`, async (_request, reply) => reply.code(204).send());

    app.post(`${p}/Systems/:sid/Actions/ComputerSystem.Reset`, async (request, reply) => {
      systemId(request);
      const type = bodyOf(request)?.['ResetType'];
      if (typeof type !== 'string' || !(RESET_TYPES as readonly string[]).includes(type)) {
        throw new HttpError('Missing or invalid ResetType');
      }
      // kvmd: a device without ATX accepts the action and does nothing.
      if (atx.getState().enabled) await act[type as ResetType]();
      return reply.code(204).send();
    });

    app.get(`${p}/Managers`, async (_request, reply) =>
      json(reply, {
        '@odata.id': '/redfish/v1/Managers',
        '@odata.type': '#ManagerCollection.ManagerCollection',
        Name: 'Manager Collection',
        Members: [{ '@odata.id': '/redfish/v1/Managers/BMC' }],
        'Members@odata.count': 1,
      }),
    );

    app.get(`${p}/Managers/BMC`, async (_request, reply) =>
      json(reply, {
        '@odata.id': '/redfish/v1/Managers/BMC',
        '@odata.type': '#Manager.v1_15_0.Manager',
        Id: 'BMC',
        Name: 'KVM Manager',
        Description: 'KVM Baseboard Management Controller',
        ManagerType: 'BMC',
        VirtualMedia: { '@odata.id': '/redfish/v1/Managers/BMC/VirtualMedia' },
      }),
    );

    app.get(`${p}/Managers/BMC/VirtualMedia`, async (_request, reply) =>
      json(reply, {
        '@odata.id': '/redfish/v1/Managers/BMC/VirtualMedia',
        '@odata.type': '#VirtualMediaCollection.VirtualMediaCollection',
        Name: 'Virtual Media Collection',
        Members: [{ '@odata.id': MSD }],
        'Members@odata.count': 1,
      }),
    );

    app.get(`${p}/Managers/BMC/VirtualMedia/MSD`, async (_request, reply) => {
      const state = msd.getState();
      const drive = state.online ? state.drive : null;
      const path = drive?.image?.name ?? null;
      return json(reply, {
        '@odata.id': MSD,
        '@odata.type': '#VirtualMedia.v1_4_0.VirtualMedia',
        Id: 'MSD',
        Name: 'Virtual CD/DVD/Flash Drive',
        Description: 'Virtual CD/DVD/Flash Drive',
        MediaTypes: ['USBStick', 'CD', 'DVD'],
        Image: path,
        ImageName: path === null ? null : basename(path),
        ConnectedVia: drive ? (drive.image ? 'Oem' : 'NotConnected') : null,
        Inserted: drive ? drive.connected : null,
        WriteProtected: drive ? drive.rw : null,
        Oem: {
          PiKVM: {
            '@odata.context': '/redfish/v1/$metadata#PiKVMVirtualMedia.PiKVMVirtualMedia',
            '@odata.type': '#PiKVMVirtualMedia.v1_0_0.PiKVMVirtualMedia',
            MsdEnabled: state.enabled,
            MsdOnline: state.online,
            MsdBusy: state.busy,
            DriveOptical: drive ? drive.cdrom : null,
          },
        },
        Actions: {
          '#VirtualMedia.InsertMedia': {
            target: `${MSD}/Actions/VirtualMedia.InsertMedia`,
            'Image@Redfish.AllowableValues': ['URI'],
          },
          '#VirtualMedia.EjectMedia': { target: `${MSD}/Actions/VirtualMedia.EjectMedia` },
        },
      });
    });

    app.post(
      `${p}/Managers/BMC/VirtualMedia/MSD/Actions/VirtualMedia.InsertMedia`,
      async (request, reply) => {
        const body = bodyOf(request);
        if (!body) throw new HttpError('Invalid body');
        const name = storedName(body['Image']);
        const connect = bool('Inserted', body['Inserted'], true);
        const rw = !bool('WriteProtected', body['WriteProtected'], true);
        if (msd.getState().drive.connected) {
          await msd.setConnected(false);
          await msd.setParams({ image: '' });
        }
        await msd.setParams({ image: name, cdrom: name.toLowerCase().endsWith('.iso'), rw });
        if (connect) await msd.setConnected(true);
        return reply.code(204).send();
      },
    );

    app.post(
      `${p}/Managers/BMC/VirtualMedia/MSD/Actions/VirtualMedia.EjectMedia`,
      async (_request, reply) => {
        await msd.setConnected(false);
        await msd.setParams({ image: '' });
        return reply.code(204).send();
      },
    );
  }
}
