/**
 * Time as this client sees it: object-store's `Clock` (a zero-dependency package), so one
 * `ManualClock` or `systemClock` drives the client, the reflector and the loop alike.
 */
export { abortReason, sleep, systemClock, type Clock } from '@reconcile-loop/object-store';
