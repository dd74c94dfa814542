/** Test data shared by the system services' tests (no test imports another test file). */

/** A good static `set_network_config` query: 10.0.0.77/24 behind 10.0.0.1, two name servers. */
export const STATIC_QUERY = {
  mode: 'static',
  ip_address: '10.0.0.77',
  netmask: '255.255.255.0',
  gateway: '10.0.0.1',
  dns_servers: '1.1.1.1,9.9.9.9',
};
