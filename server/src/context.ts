/** What the routes are built from: configuration and the services, made by `createContext`. */
import { hostname } from 'node:os';
import type { AppConfig } from './config';
import type { AuthService } from './services/auth/auth-service';
import type { SettingsStore } from './services/settings-store';
import type { StateRegistry } from './ws/state-registry';

export interface AppContext {
  config: AppConfig;
  /** The product's firmware version (root package.json). */
  version: string;
  auth: AuthService;
  settings: SettingsStore;
  registry: StateRegistry;
  /** Host name reported in /api/info meta. */
  host: string;
}

export function defaultHost(): string {
  return hostname();
}
