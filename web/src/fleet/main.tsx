import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { FleetApp } from './app/FleetApp';
import { routeOfHash } from './lib/links';
import './app/fleet.css';

// Part 1's hash addresses (a device's bind link is `/?code=<8 digits>#devices`) become routes.
const fromHash = location.pathname === '/' ? routeOfHash(location.hash) : null;
if (fromHash) history.replaceState(null, '', `${fromHash}${location.search}`);

const container = document.getElementById('root');
if (!container) throw new Error('#root is missing from fleet.html');
createRoot(container).render(
  <StrictMode>
    <FleetApp />
  </StrictMode>,
);
