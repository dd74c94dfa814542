import { Space } from 'antd';
import { DeviceInfo, useFingerbotInfo } from './DeviceInfo';
import { FirmwareSection } from './FirmwareSection';
import {
  PressButton,
  PressTimeField,
  StrengthField,
  usePressTime,
  useStrength,
} from './PressSection';

/**
 * SPEC 2/3 fingerbot: press time (1-60 s, remembered in this browser), strength (the user
 * setting fingerbot_strength), press, battery, firmware version, firmware upload and upgrade.
 * One component per section; their calls share `useFingerbotCall` (busy and toasts).
 */
export default function FingerbotPanel() {
  const strength = useStrength();
  const pressTime = usePressTime();
  const info = useFingerbotInfo();
  return (
    <div data-testid="fingerbot-panel">
      <Space orientation="vertical" style={{ width: '100%' }} size={12}>
        <PressTimeField {...pressTime} />
        <StrengthField strength={strength} />
        <PressButton pressTime={pressTime.pressTime} strength={strength} />
        <DeviceInfo {...info} />
      </Space>
      <FirmwareSection onUpgraded={info.refresh} />
    </div>
  );
}
