import { Select } from 'antd';
import type { ReactNode } from 'react';

export interface OptionItem<V extends string | number> {
  value: V;
  label: ReactNode;
}

export interface DropdownSelectProps<V extends string | number> {
  value: V | undefined;
  options: readonly OptionItem<V>[];
  onChange: (value: V) => void;
  disabled?: boolean;
  placeholder?: ReactNode;
  width?: number | string;
  testId?: string;
}

/** SPEC 2 shared dialogs: a dropdown select over option items (SPEC 3 "Option item"). */
export function DropdownSelect<V extends string | number>({
  value,
  options,
  onChange,
  disabled,
  placeholder,
  width = '100%',
  testId,
}: DropdownSelectProps<V>) {
  return (
    <Select<V>
      value={value}
      options={options.map((o) => ({ value: o.value, label: o.label }))}
      onChange={onChange}
      disabled={disabled}
      placeholder={placeholder}
      style={{ width }}
      data-testid={testId}
    />
  );
}
