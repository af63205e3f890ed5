// A module of the plugin's own: an exception thrown here is named by this file and line.

export function firstOrderTotal(orders) {
  return orders[0].total; // the bug
}
