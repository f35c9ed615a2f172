import { IsBoolean, IsOptional, IsString, MaxLength } from 'class-validator';
import { Optional } from '../../common/optional.js';

export class ValidateUrlDto {
  /** The URL to check (null too: the `present` check fails, as documented); absent means "check what is stored" is not offered: validation says so. */
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  url?: string;

  /** false: only check. By default a valid, reachable URL becomes the custom public URL. */
  @Optional()
  @IsBoolean()
  save?: boolean;
}
