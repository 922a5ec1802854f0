// The dashboard's entry: reads the session, then renders the frame.
import { render } from 'preact';
import { App } from './app.tsx';
import { start } from './session.ts';
import './styles.css';

render(<App />, document.getElementById('app')!);
void start().then(() => performance.mark('dashboard-interactive'));
