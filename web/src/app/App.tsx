import { BrowserRouter } from 'react-router';
import { getBase } from '../lib/base';
import { AppProviders } from './Providers';
import { AppRoutes } from './router';

export function AppRoot() {
  return (
    <AppProviders>
      {/* Under a fleet path (lib/base.ts) the routes live below `/d/<id>`. */}
      <BrowserRouter basename={getBase() || undefined}>
        <AppRoutes />
      </BrowserRouter>
    </AppProviders>
  );
}
