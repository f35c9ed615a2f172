// Error bodies: RFC 9457 problems everywhere, RFC 6749 errors at the token endpoint.

/** One entry of a problem's `errors[]`; a stack definition's issues carry their position too. */
export interface ProblemFieldError {
  path: string;
  message: string;
  category?: string;
  line?: number;
  column?: number;
}

/** RFC 9457 body (`application/problem+json`) with the service's `code` and `request_id` extensions. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  code: string;
  request_id: string;
  errors?: ProblemFieldError[];
  /** A stack definition's warnings, beside its errors on a 422 (docs/compose.md). */
  warnings?: ProblemFieldError[];
}

/** RFC 6749 section 5.2: the error body of `POST /oauth/token`. */
export interface OAuthError {
  error: string;
  error_description: string;
}
