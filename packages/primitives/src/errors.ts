/**
 * The one error base. Every error a @reconcile-loop package throws or rejects with extends
 * {@link ReconcileLoopError}: it has a stable `code` (always `RL_…`), and `instanceof` works across
 * duplicate copies of a package (an ESM and a CJS build loaded in one process, or two versions in
 * one `node_modules`), where plain class identity fails.
 *
 * How: each instance carries, under a `Symbol.for` key shared by every copy, the brands of its class
 * chain (each class's name); `instanceof` asks for the brand instead of the prototype. A bundler that
 * renames classes keeps `instanceof` within one copy; across copies, match on `code`.
 */
const BRANDS: unique symbol = Symbol.for('@reconcile-loop/error-brands') as never;

type ErrorClass = abstract new (...args: never[]) => ReconcileLoopError;

function brandOf(ctor: ErrorClass): string {
  return ctor.name;
}

export abstract class ReconcileLoopError extends Error {
  /** Stable across versions and copies; every code starts with `RL_`. */
  abstract readonly code: `RL_${string}`;
  declare readonly [BRANDS]: readonly string[];

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    const brands: string[] = [];
    for (let c: unknown = new.target; c !== ReconcileLoopError && typeof c === 'function'; c = Object.getPrototypeOf(c)) {
      brands.push(brandOf(c as ErrorClass));
    }
    Object.defineProperty(this, BRANDS, { value: Object.freeze(brands), enumerable: false });
    this.name = new.target.name;
  }

  /** True for an instance of this class (or a subclass) from any copy of its package. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (typeof value !== 'object' || value === null) return false;
    const brands = (value as { [BRANDS]?: unknown })[BRANDS];
    if (!Array.isArray(brands)) return false;
    return this === ReconcileLoopError || brands.includes(brandOf(this as unknown as ErrorClass));
  }
}

/** True when `value` is an error from any @reconcile-loop package (any copy). */
export function isReconcileLoopError(value: unknown): value is ReconcileLoopError {
  return value instanceof ReconcileLoopError;
}

/**
 * Thrown synchronously for an option or argument a component cannot run with (a constructor's
 * options, a method's argument). One class for every package: `component` says whose option it was.
 */
export class OptionsError extends ReconcileLoopError {
  readonly code = 'RL_INVALID_OPTIONS' as const;
  /** The package or class whose option was refused, e.g. `WorkQueue`. */
  readonly component: string;
  constructor(component: string, message: string, options?: { cause?: unknown }) {
    super(`${component}: ${message}`, options);
    this.component = component;
  }
}
