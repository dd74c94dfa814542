import { Descriptions } from 'antd';
import { useTranslation } from 'react-i18next';
import type { NetworkConfigWire } from '@kvm/protocol/system';

/** The device's network as it is: link, address, gateway, DNS, interface, MAC. */
export function NetworkStateView({ config }: { config: NetworkConfigWire }) {
  const { t } = useTranslation();
  const none = t('settings.network.none');
  return (
    <Descriptions size="small" column={1} data-testid="network-state" style={{ marginBottom: 12 }}>
      <Descriptions.Item label={t('settings.network.link')}>
        <span data-testid="network-link" data-link={config.link}>
          {config.link === 'up' ? t('settings.network.linkUp') : t('settings.network.linkDown')}
        </span>
      </Descriptions.Item>
      <Descriptions.Item label={t('settings.network.address')}>
        <span style={{ whiteSpace: 'nowrap' }}>
          <span data-testid="network-address">{config.ip_address || none}</span>
          {` (${config.is_dhcp ? 'DHCP' : t('settings.network.static')})`}
        </span>
      </Descriptions.Item>
      <Descriptions.Item label={t('settings.network.netmask')}>
        {config.netmask || none}
      </Descriptions.Item>
      <Descriptions.Item label={t('settings.network.gateway')}>
        {config.gateway || none}
      </Descriptions.Item>
      <Descriptions.Item label={t('settings.network.dns')}>
        {config.dns_servers.join(', ') || none}
      </Descriptions.Item>
      <Descriptions.Item label={t('settings.network.interface')}>
        {config.interface || none}
      </Descriptions.Item>
      <Descriptions.Item label={t('settings.network.mac')}>
        <span data-testid="network-mac">{config.mac_address || none}</span>
      </Descriptions.Item>
    </Descriptions>
  );
}
