/**
 * @reconcile-loop/kube-client/errors: apimachinery's `Is*` guards (`k8s.io/apimachinery/pkg/api/errors`),
 * one per `StatusReason`, with apimachinery's rule (a known reason decides; an unknown one falls back
 * to the HTTP code), and `statusError` for a `Status` that arrived in-band (a watch `ERROR` frame).
 */
export {
  isAlreadyExists,
  isBadRequest,
  isConflict,
  isExpired,
  isForbidden,
  isGone,
  isInternalError,
  isInvalid,
  isMethodNotSupported,
  isNotAcceptable,
  isNotFound,
  isRequestEntityTooLarge,
  isServerTimeout,
  isServiceUnavailable,
  isTimeout,
  isTooManyRequests,
  isUnauthorized,
  isUnsupportedMediaType,
  statusError,
} from './errors.js';
