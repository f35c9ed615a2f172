import { IsString, Matches, MaxLength } from 'class-validator';
import { TOKEN_FORMAT } from '../../../workers/join-tokens.service.js';

export class InstallCommandDto {
  /** A join token of the caller's owner (`sojt_<id>.<secret>`), checked for its format before anything else. */
  @IsString({ message: 'token must be a string' })
  @MaxLength(100, { message: 'token must be a join token, at most 100 characters' })
  @Matches(TOKEN_FORMAT, {
    message: 'token must be a join token: sojt_, 16 characters of [A-Za-z0-9_-], a dot, 43 more',
  })
  token: string;
}
