import { BrowserRouter } from 'react-router';
import { AppProviders } from './Providers';
import { AppRoutes } from './router';

export function AppRoot() {
  return (
    <AppProviders>
      <BrowserRouter>
        <AppRoutes />
      </BrowserRouter>
    </AppProviders>
  );
}
