// Sign in with email and password (the session cookie is set by the API), or through the OpenID
// Connect provider the instance offers, when it offers one.
import { useState } from 'preact/hooks';
import { api, unwrap } from '../api/client.ts';
import { ProblemView } from '../ui/problem.tsx';
import { useLoad } from '../ui/load.ts';
import { useAction } from '../ui/action.ts';
import { start } from '../session.ts';

export function SignIn(props: { error?: unknown }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const signing = useAction();
  const options = useLoad(() => unwrap(api.GET('/api/auth/sign-in/options')), []);
  const social = options.data?.social ?? null;

  const submit = (e: Event) => {
    e.preventDefault();
    void signing.run(async () => {
      await unwrap(api.POST('/api/auth/sign-in/email', { body: { email, password } }));
      await start();
    });
  };
  const error = signing.error ?? props.error;

  return (
    <main id="main" class="sign-in">
      <h1>Sign in to Agent Platform</h1>
      <form onSubmit={submit}>
        <label for="email">Email</label>
        <input id="email" type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        <label for="password">Password</label>
        <input id="password" type="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        <button type="submit" class="primary" disabled={signing.busy}>Sign in</button>
      </form>
      {error ? <ProblemView error={error} /> : null}
      {social ? (
        <p class="social">
          <a class="button" href={`${social.url}?${new URLSearchParams({ return_to: '/' })}`}>Sign in with {social.name}</a>
        </p>
      ) : null}
    </main>
  );
}
