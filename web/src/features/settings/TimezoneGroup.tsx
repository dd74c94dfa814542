import { useEffect, useState } from 'react';
import { Button, Select, Space, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { useStore } from 'zustand';
import { useMessage } from '../../components/notify';
import { errorMessage } from '../../lib/api';
import { createTimeStore } from '../system/time-store';
import {
  deviceNowMs,
  formatDeviceTime,
  offsetHoursOf,
  UTC_OFFSET_HOURS,
  utcOffsetLabel,
} from '../system/time-zone';
import { SettingsField as Field, SettingsGroup } from './SettingsGroup';

const OFFSET_OPTIONS = UTC_OFFSET_HOURS.map((hours) => ({
  value: hours,
  label: utcOffsetLabel(hours * 60),
}));

/** The device's clock, ticking here every second from its last reading, and its zone. */
function DeviceClock(props: {
  time: number;
  receivedAt: number;
  offsetMinutes: number;
  zone: string;
}) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  const at = deviceNowMs(props.time, props.receivedAt, now);
  return (
    <Typography.Text data-testid="timezone-current" data-zone={props.zone}>
      <Typography.Text strong>{formatDeviceTime(at, props.offsetMinutes)}</Typography.Text>{' '}
      {props.zone} ({utcOffsetLabel(props.offsetMinutes)})
    </Typography.Text>
  );
}

/** SPEC 2/3 settings: time zone (UTC offset with the inverted sign, or a city zone). */
export default function TimezoneGroup() {
  const { t } = useTranslation();
  const message = useMessage();
  const [store] = useState(createTimeStore);
  const state = useStore(store);
  // The choice waits for Apply: a zone change moves the device clock's wall time.
  const [offsetChoice, setOffsetChoice] = useState<number | undefined>();
  const [cityChoice, setCityChoice] = useState<string | undefined>();
  useEffect(() => {
    void store.load();
    return () => store.dispose();
  }, [store]);

  const change = (work: Promise<void>) => {
    work.then(
      () => {
        setOffsetChoice(undefined);
        setCityChoice(undefined);
        void message.success(t('settings.timezone.changed'));
      },
      (err: unknown) => void message.error(errorMessage(err, t('common.settingFailed'))),
    );
  };

  const time = state.time;
  const offset = time?.utc_offset_minutes ?? 0;
  return (
    <SettingsGroup title={t('settings.timezone.title')} testId="settings-group-timezone">
      {state.loadFailed && !time && (
        <Typography.Text type="danger">{t('settings.system.loadFailed')}</Typography.Text>
      )}
      {time && (
        <Field label={t('settings.timezone.deviceTime')}>
          <DeviceClock
            time={time.time}
            receivedAt={state.receivedAt}
            offsetMinutes={offset}
            zone={time.timezone_name}
          />
        </Field>
      )}
      <Field label={t('settings.timezone.offset')}>
        <Space.Compact style={{ width: '100%' }}>
          <Select<number>
            showSearch
            optionFilterProp="label"
            data-testid="timezone-offset"
            style={{ width: '100%' }}
            value={offsetChoice ?? (time ? offsetHoursOf(offset) : undefined)}
            options={OFFSET_OPTIONS}
            disabled={!time || state.busy}
            placeholder={t('settings.timezone.offsetPlaceholder')}
            onChange={setOffsetChoice}
          />
          <Button
            data-testid="timezone-offset-apply"
            disabled={offsetChoice === undefined || state.busy}
            onClick={() => offsetChoice !== undefined && change(store.setOffset(offsetChoice))}
          >
            {t('settings.timezone.apply')}
          </Button>
        </Space.Compact>
      </Field>
      <Field label={t('settings.timezone.city')}>
        <Space.Compact style={{ width: '100%' }}>
          <Select<string>
            showSearch
            data-testid="timezone-city"
            style={{ width: '100%' }}
            value={
              cityChoice ??
              (time && state.zones.includes(time.timezone_name) ? time.timezone_name : undefined)
            }
            options={state.zones.map((zone) => ({ value: zone, label: zone }))}
            disabled={!time || state.busy || state.zones.length === 0}
            placeholder={t('settings.timezone.cityPlaceholder')}
            onChange={setCityChoice}
          />
          <Button
            data-testid="timezone-city-apply"
            disabled={cityChoice === undefined || state.busy}
            onClick={() => cityChoice !== undefined && change(store.setCity(cityChoice))}
          >
            {t('settings.timezone.apply')}
          </Button>
        </Space.Compact>
      </Field>
    </SettingsGroup>
  );
}
