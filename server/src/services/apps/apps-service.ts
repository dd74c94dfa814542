/**
 * The apps center (issue 27, docs/apps.md): every private-network app this device has, as one
 * list. Each app's own calls are its service's; this one only gathers their summaries.
 */
import { APP_IDS, type AppId, type AppSummary } from '@kvm/protocol/apps';
import type { AppDriver } from '../../drivers/apps/types';

export class AppsService {
  private readonly byId = new Map<AppId, AppDriver>();

  constructor(drivers: readonly AppDriver[]) {
    for (const d of drivers) this.byId.set(d.id, d);
  }

  get(id: AppId): AppDriver | undefined {
    return this.byId.get(id);
  }

  /** The apps in APP_IDS order; each summary is asked at once (a slow tool does not delay the others beyond its own timeout). */
  async list(): Promise<AppSummary[]> {
    const drivers = APP_IDS.map((id) => this.byId.get(id)).filter(
      (d): d is AppDriver => d !== undefined,
    );
    return Promise.all(drivers.map((d) => d.summary()));
  }

  /** Starts each app's driver (an app that was on comes back on); one failing does not stop the others. */
  async init(): Promise<void> {
    await Promise.allSettled([...this.byId.values()].map((d) => d.init()));
  }

  async dispose(): Promise<void> {
    await Promise.allSettled([...this.byId.values()].map((d) => d.dispose()));
  }
}
