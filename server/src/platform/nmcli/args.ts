/**
 * What may stand where on an nmcli command line (NetworkManager `src/nmcli`, read for these
 * facts):
 *
 * - A bare argument right after a command (`device show <ifname>`, `general hostname <name>`,
 *   `device wifi connect <ssid>`) is a help request when it is a prefix of `help`, with or
 *   without `-`/`--` (`h`, `he`, `-h`, `--help`): nmcli prints the usage and exits 0.
 * - Before each bare argument nmcli also takes the global options `--ask` and
 *   `--show-secrets` (and their prefixes `-a`, `-s`, `--as`...), wherever they stand.
 * - `device wifi connect <x>` reads `x` as a BSSID when it looks like one.
 * - A value after a `<setting>.<property>` name (`connection add`/`modify`) and after the
 *   keywords `uuid`, `ifname`, `ap`, `password` is taken as it is, whatever it starts with.
 *
 * So a value from a client only ever goes after a property name or keyword; what nmcli reads
 * bare (interface names and host names) is checked here first.
 */

/** Whether nmcli would read `arg`, standing bare, as a help request or an option. */
export function nmcliReadsAsOption(arg: string): boolean {
  if (arg.startsWith('-')) return true;
  return arg.length > 0 && 'help'.startsWith(arg);
}

/**
 * A Linux interface name (1-15 bytes; no `/`, `:` or white space) that nmcli reads as a name
 * where it stands bare: letters, digits and `_ . @ + -`, not starting with `-`, not `h`..`help`.
 */
export function isSafeIfname(name: string): boolean {
  return /^[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,14}$/.test(name) && !nmcliReadsAsOption(name);
}

/** A NetworkManager connection UUID as `connection show` lists it. */
export function isUuid(text: string): boolean {
  return /^[0-9A-Fa-f]{8}(-?[0-9A-Fa-f]{4}){3}-?[0-9A-Fa-f]{12}$/.test(text);
}
