/**
 * @reconcile-loop/k8s-types: zod views of Kubernetes objects (validated, partial), the one `Status`
 * type, and the typed errors of reading them. The byte-level readers the reflector and kube-client
 * use (watch frames and LIST pages read from their bytes, the WASM scanner) are in `./internal`,
 * not part of the stable API.
 */

// Views: build a schema for the fields a controller reads; key objects.
export {
  compileSchema,
  objectMetaSchema,
  objectSchema,
  typeMetaShape,
  type KubernetesObjectView,
  type ObjectMeta,
  type ObjectSchema,
  type OwnerReference,
} from './meta.js';

// Metadata only: the view of a kind a controller only owns or watches (PartialObjectMetadata).
export { partialObjectMetadataSchema, type PartialObjectMetadata } from './metadata.js';

// The object key (`namespace/name`) has one home, primitives; re-exported beside the views that carry it.
export { objectKey } from '@reconcile-loop/primitives';

// Pods: the view a pool tracker reads, and the core/v1 resource.
export {
  podResource,
  podSchema,
  type ApiResource,
  type ContainerState,
  type ContainerStatus,
  type Pod,
  type PodCondition,
  type PodStatus,
} from './pod.js';

// The built-in kinds controllers read most: `kinds.Service` is `{ resource, schema }`; `KindView<'Service'>` its view.
export { kinds, type KindView } from './kinds.js';

// Label selectors: a matcher for `metav1.LabelSelector`, and the values of a label index.
export {
  labelSelectorMatcher,
  labelIndexValues,
  InvalidLabelSelectorError,
  type LabelSelector,
  type Labels,
} from './label-selector.js';

// Controller references: set, test and read an object's controller (controllerutil, metav1).
export {
  setControllerReference,
  isControlledBy,
  controllerOf,
  AlreadyOwnedError,
  InvalidOwnerError,
} from './owner-references.js';

// Status conditions: set, find and remove `metav1.Condition`s in a new list (apimachinery's api/meta).
export {
  setStatusCondition,
  findStatusCondition,
  removeStatusCondition,
  InvalidConditionError,
  type Condition,
} from './conditions.js';

// The Kubernetes Status object, and the watch frames that carry objects or a Status.
export { statusSchema } from './watch.js';
export type { Status, StatusCause, WatchFrame } from './watch-frame.js';

// Errors: every one extends primitives' ReconcileLoopError (codes RL_TYPES_*).
export {
  describeIssue,
  InvalidObjectError,
  isInvalidObjectError,
  isMalformedWatchFrameError,
  MalformedWatchFrameError,
} from './errors.js';
