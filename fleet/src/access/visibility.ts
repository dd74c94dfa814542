/**
 * Who sees which device (docs/cloud.md "Users, groups and roles"): an admin every bound device;
 * a user the devices it bound itself plus those of every device group linked to one of its user
 * groups. Every route that names, lists, opens or acts on devices filters through here, so the
 * rule is written once, in SQL, and the planner uses the membership indexes (migration 2).
 */
import type { FleetUser } from '../context';

/**
 * A SQL condition on the devices table's row `alias` (revoked or not is the caller's choice)
 * that is true when `user` may see it; `param` is the 1-based number of the parameter the
 * caller binds to `user.accountId`. For an admin it is `TRUE` and binds nothing: callers pass
 * `visibilityParams(user)` (an empty array for an admin).
 */
export function visibleTo(user: FleetUser, alias: string, param: number): string {
  if (user.role === 'admin') return 'TRUE';
  return `(${alias}.account_id = $${param} OR EXISTS (
    SELECT 1 FROM device_group_members dgm
      JOIN group_links gl ON gl.device_group_id = dgm.group_id
      JOIN user_group_members ugm ON ugm.group_id = gl.user_group_id
    WHERE dgm.device_id = ${alias}.id AND ugm.account_id = $${param}))`;
}

/** The parameters `visibleTo` binds (the account id for a user, none for an admin). */
export function visibilityParams(user: FleetUser): string[] {
  return user.role === 'admin' ? [] : [user.accountId];
}
