import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from './api.js';
import { BASE, navigate } from './router.js';

/** A problem as the service wrote it: its title, its detail and any field errors. */
export function ProblemView({ error }: { error: ApiError | undefined }) {
  if (!error) return null;
  const p = error.problem;
  return (
    <div class="problem" role="alert">
      <strong>{p.title}</strong>
      {p.detail && <p>{p.detail}</p>}
      {p.errors && p.errors.length > 0 && (
        <ul>
          {p.errors.map((e, i) => (
            <li key={i}>
              {typeof e.line === 'number' && `line ${e.line}, column ${e.column ?? 1}: `}
              {e.path && <code>{e.path}</code>} {e.message}
            </li>
          ))}
        </ul>
      )}
      {p.request_id && <small>request {p.request_id}</small>}
    </div>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

export function Loading({ when }: { when: boolean }) {
  return when ? (
    <p class="muted" aria-live="polite">
      Loading…
    </p>
  ) : null;
}

/** An in-console link: a real href (opens in a new tab too) that navigates without reloading. */
export function Link({
  to,
  children,
  class: cls,
}: {
  to: string;
  children: ComponentChildren;
  class?: string;
}) {
  return (
    <a
      href={`${BASE}${to}`}
      class={cls}
      onClick={(e) => {
        if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(to);
      }}
    >
      {children}
    </a>
  );
}

export function Badge({ value }: { value: string }) {
  return <span class={`badge badge-${value}`}>{value.replace(/_/g, ' ')}</span>;
}

export function Pager({
  page,
  nextCursor,
  onNext,
  onPrevious,
}: {
  page: number;
  nextCursor: string | null | undefined;
  onNext: (cursor: string) => void;
  onPrevious: () => void;
}) {
  if (page === 1 && !nextCursor) return null;
  return (
    <nav class="pager" aria-label="Pagination">
      <button type="button" disabled={page === 1} onClick={onPrevious}>
        Previous
      </button>
      <span>Page {page}</span>
      <button type="button" disabled={!nextCursor} onClick={() => nextCursor && onNext(nextCursor)}>
        Next
      </button>
    </nav>
  );
}

/** A button that asks first, in a modal dialog (focus kept inside, Escape cancels). */
export function ConfirmButton({
  label,
  question,
  confirm,
  onConfirm,
  disabled,
  danger = true,
}: {
  label: string;
  question: string;
  confirm: string;
  onConfirm: () => void;
  disabled?: boolean;
  danger?: boolean;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  return (
    <>
      <button
        type="button"
        class={danger ? 'danger' : undefined}
        disabled={disabled}
        onClick={() => dialog.current?.showModal()}
      >
        {label}
      </button>
      <dialog ref={dialog} aria-label={label}>
        <form
          method="dialog"
          onSubmit={(e) => {
            const submitter = (e as SubmitEvent).submitter as HTMLButtonElement | null;
            if (submitter?.value === 'yes') onConfirm();
          }}
        >
          <p>{question}</p>
          <div class="actions">
            <button type="submit" value="no" autofocus>
              Cancel
            </button>
            <button type="submit" value="yes" class={danger ? 'danger' : 'primary'}>
              {confirm}
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  useEffect(() => {
    if (!done) return;
    const t = setTimeout(() => setDone(false), 1500);
    return () => clearTimeout(t);
  }, [done]);
  return (
    <button
      type="button"
      onClick={() => {
        void navigator.clipboard?.writeText(text).then(() => setDone(true));
      }}
    >
      {done ? 'Copied' : label}
    </button>
  );
}

export function Meter({ label, value }: { label: string; value: number }) {
  const v = Math.max(0, Math.min(100, value));
  return (
    <div class="meter" title={`${label} ${v.toFixed(0)} %`}>
      <span class="meter-label">{label}</span>
      <meter min={0} max={100} low={70} high={90} optimum={0} value={v} aria-label={label} />
      <span class="meter-value">{v.toFixed(0)}%</span>
    </div>
  );
}

export function time(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}

export function ago(iso: string | null | undefined): string {
  if (!iso) return 'never';
  const s = Math.round((Date.now() - new Date(iso).getTime()) / 1000);
  if (s < 60) return `${Math.max(0, s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

export function Section({
  title,
  children,
  actions,
}: {
  title: string;
  children: ComponentChildren;
  actions?: ComponentChildren;
}) {
  return (
    <section class="card" aria-label={title}>
      <header class="card-head">
        <h2>{title}</h2>
        {actions && <div class="actions">{actions}</div>}
      </header>
      {children}
    </section>
  );
}

/** A table's header row; a `{ hidden }` column has a name for screen readers only. */
export function TableHead({ columns }: { columns: (string | { hidden: string })[] }) {
  return (
    <thead>
      <tr>
        {columns.map((c) =>
          typeof c === 'string' ? (
            <th key={c} scope="col">
              {c}
            </th>
          ) : (
            <th key={c.hidden} scope="col">
              <span class="sr-only">{c.hidden}</span>
            </th>
          ),
        )}
      </tr>
    </thead>
  );
}

/** A form control with its own label (for/id, so the control's name is exactly the label). */
export function Field({
  id,
  label,
  inline,
  grow,
  children,
}: {
  id: string;
  label: string;
  inline?: boolean;
  grow?: boolean;
  children: ComponentChildren;
}) {
  return (
    <span class={`field${inline ? ' inline' : ''}${grow ? ' grow' : ''}`}>
      <label for={id}>{label}</label>
      {children}
    </span>
  );
}
