# Server-to-client requests: test_sampling sends sampling/createMessage and
# the elicitation tools send elicitation/create on the call's POST stream,
# with integer ids unique in the session; the client POSTs its answer (202)
# to any worker and the waiting call gets it.  No capability: an isError
# result and no request.  No answer within mcp_request_timeout: an isError
# result.  Answers to unknown ids are ignored.  The key test: 40 rounds
# where the answer travels on a fresh connection, often to another worker.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use McpTest;
use McpAssert;
use McpStream;

my $t = streaming_server(location => 'mcp_request_timeout 1s;');

my %CAPS = (sampling => {}, elicitation => {});
my ($sid) = $t->mcp_initialize(capabilities => \%CAPS);
my %request_ids;    # every server request id seen in $sid

sub text_of { ((($_[0] // {})->{result} // {})->{content} // [ {} ])->[0]{text} }

# Start a call and read up to its server request; returns ($stream, $request_event).
sub start_call {
    my ($s_id, $id, $tool, $args, %o) = @_;
    my $s = call_stream($t, $s_id, $id, $tool, $args, %o);
    my $prime = take($s, 3);
    my $req = take($s, 3);
    $request_ids{ $req->{json}{id} }++ if $s_id eq $sid && $req && $req->{json};
    return ($s, $req, $prime);
}

# --- sampling ---------------------------------------------------------------------

{
    my $prompt = 'Test prompt for sampling';
    my ($s, $req, $prime) = start_call($sid, 'sa1', 'test_sampling', { prompt => $prompt });
    is($s->status, 200, 'test_sampling: 200');
    like($s->header('content-type') // '', qr{^text/event-stream\b}, 'test_sampling: SSE reply');
    priming_ok($prime, 1000, 'test_sampling: priming event first');
    my $m = $req && $req->{json} || {};
    is($m->{method}, 'sampling/createMessage', 'the request: sampling/createMessage');
    is($m->{jsonrpc}, '2.0', 'the request: jsonrpc 2.0');
    like($req && $req->{data}, qr/"id":[1-9]\d*[,}]/, 'the request: an integer id');
    is_deeply($m->{params}, { messages => [ { role => 'user',
                                              content => { type => 'text', text => $prompt } } ],
                              maxTokens => 100 },
              'the request: one user message with the prompt, maxTokens 100');
    is((id_parts($req->{id}))[0], (id_parts($prime->{id}))[0], 'the request travels on the call\'s stream');

    my $r = answer($t, $sid, $m->{id}, sampling_answer('This is a test response from the client'));
    is($r->{status}, 202, 'the answer: 202');
    is($r->{body}, '', 'the answer: empty body');
    my @ev = take_all($s, 3);
    ended_ok($s, 'test_sampling: the stream ends after the response');
    is(scalar @ev, 1, 'test_sampling: one more event, the response');
    is_result($ev[-1]{json}, { content => [ { type => 'text',
              text => 'LLM response: This is a test response from the client' } ] }, 'sa1',
              'test_sampling: "LLM response: <answer>"');
}

{
    # Two calls at once: distinct request ids; each gets its own answer.
    my ($s1, $q1) = start_call($sid, 'two-a', 'test_sampling', { prompt => 'a' });
    my ($s2, $q2) = start_call($sid, 'two-b', 'test_sampling', { prompt => 'b' });
    my ($i1, $i2) = map { $_ && $_->{json}{id} } $q1, $q2;
    ok(defined $i1 && defined $i2 && $i1 != $i2, "two calls: request ids differ ($i1, $i2)");
    is(answer($t, $sid, $i2, sampling_answer('for b'))->{status}, 202, 'answer b first: 202');
    is(answer($t, $sid, $i1, sampling_answer('for a'))->{status}, 202, 'then a: 202');
    my @e1 = take_all($s1, 3);
    my @e2 = take_all($s2, 3);
    is(text_of($e1[-1]{json}), 'LLM response: for a', 'call a got answer a');
    is(text_of($e2[-1]{json}), 'LLM response: for b', 'call b got answer b');
}

# --- elicitation ------------------------------------------------------------------

{
    my $msg = 'Please provide your information';
    my ($s, $req) = start_call($sid, 'el1', 'test_elicitation', { message => $msg });
    my $m = $req && $req->{json} || {};
    is($m->{method}, 'elicitation/create', 'test_elicitation: elicitation/create');
    like($req && $req->{data}, qr/"id":[1-9]\d*[,}]/, 'test_elicitation: an integer id');
    is_deeply($m->{params}, {
        mode => 'form', message => $msg,
        requestedSchema => { type => 'object', required => [ 'username', 'email' ], properties => {
            username => { type => 'string', description => "User's response" },
            email    => { type => 'string', description => "User's email address" } } } },
        'test_elicitation: form mode, the message, the username/email schema');
    my $content = { username => 'testuser', email => 'test@example.com' };
    is(answer($t, $sid, $m->{id}, { action => 'accept', content => $content })->{status}, 202,
       'test_elicitation: answer 202');
    my @ev = take_all($s, 3);
    ended_ok($s, 'test_elicitation: the stream ends');
    my $text = text_of($ev[-1]{json}) // '';
    like($text, qr/^User response: action=accept, content=\{/,
         'test_elicitation: "User response: action=accept, content={...}"');
    my ($json) = $text =~ /content=(\{.*\})$/;
    is_deeply(eval { McpTest::decode_json($json) }, $content, 'test_elicitation: the content returned');
    ok(!$ev[-1]{json}{result}{isError}, 'test_elicitation: not an error');

    ($s, $req) = start_call($sid, 'el2', 'test_elicitation', { message => 'again' });
    answer($t, $sid, $req->{json}{id}, { action => 'decline' });
    @ev = take_all($s, 3);
    is(text_of($ev[-1]{json}), 'User response: action=decline, content=null',
       'test_elicitation declined: action=decline, content=null');
}

{
    my ($s, $req) = start_call($sid, 'd1', 'test_elicitation_sep1034_defaults', {});
    my $p = $req && $req->{json}{params} || {};
    is($req && $req->{json}{method}, 'elicitation/create', 'sep1034: elicitation/create');
    is($p->{mode}, 'form', 'sep1034: form mode');
    ok(defined $p->{message} && length $p->{message}, 'sep1034: a message');
    my $props = $p->{requestedSchema}{properties} || {};
    is_deeply([ sort keys %$props ], [ qw(age name score status verified) ],
              'sep1034: name, age, score, status, verified');
    is_deeply([ map { [ $props->{$_}{type}, $props->{$_}{default} ] } qw(name age score status) ],
              [ [ string => 'John Doe' ], [ integer => 30 ], [ number => 95.5 ], [ string => 'active' ] ],
              'sep1034: types and defaults');
    like($req->{data}, qr/"age":\{[^}]*"default":30[,}]/, 'sep1034: age default is the integer 30');
    like($req->{data}, qr/"score":\{[^}]*"default":95\.5[,}]/, 'sep1034: score default is 95.5');
    is_deeply($props->{status}{enum}, [ qw(active inactive pending) ], 'sep1034: status enum');
    is($props->{verified}{type}, 'boolean', 'sep1034: verified is boolean');
    ok(JSON::PP::is_bool($props->{verified}{default}) && $props->{verified}{default},
       'sep1034: verified default is JSON true');
    my $content = { name => 'Jane Smith', age => 25, score => 88, status => 'inactive',
                    verified => JSON::PP::false() };
    answer($t, $sid, $req->{json}{id}, { action => 'accept', content => $content });
    my @ev = take_all($s, 3);
    my $text = text_of($ev[-1]{json}) // '';
    like($text, qr/^Elicitation completed: action=accept, content=\{/, 'sep1034: result text');
    my ($json) = $text =~ /content=(\{.*\})$/;
    is_deeply(eval { McpTest::decode_json($json) }, $content, 'sep1034: the content returned');
}

{
    my ($s, $req) = start_call($sid, 'e1', 'test_elicitation_sep1330_enums', {});
    my $p = $req && $req->{json}{params} || {};
    is($p->{mode}, 'form', 'sep1330: form mode');
    my $pr = $p->{requestedSchema}{properties} || {};
    is_deeply([ sort keys %$pr ], [ qw(legacyEnum titledMulti titledSingle untitledMulti untitledSingle) ],
              'sep1330: the five enum fields');
    my @opt = qw(option1 option2 option3);
    my $titled = sub { my $w = shift; [ map { { const => "value$_", title => (qw(First Second Third))[$_ - 1] . " $w" } } 1 .. 3 ] };
    my $u = $pr->{untitledSingle} || {};
    ok($u->{type} eq 'string' && !exists $u->{oneOf} && !exists $u->{enumNames},
       'sep1330: untitledSingle is a plain string enum');
    is_deeply($u->{enum}, \@opt, 'sep1330: untitledSingle enum');
    my $ts = $pr->{titledSingle} || {};
    ok(($ts->{type} // '') eq 'string' && !exists $ts->{enum}, 'sep1330: titledSingle has no enum');
    is_deeply($ts->{oneOf}, $titled->('Option'), 'sep1330: titledSingle oneOf const/title');
    my $l = $pr->{legacyEnum} || {};
    is_deeply([ $l->{type}, $l->{enum}, $l->{enumNames} ],
              [ 'string', [ qw(opt1 opt2 opt3) ], [ 'Option One', 'Option Two', 'Option Three' ] ],
              'sep1330: legacyEnum with enumNames');
    my $um = $pr->{untitledMulti} || {};
    ok(($um->{type} // '') eq 'array' && !exists $um->{items}{anyOf}, 'sep1330: untitledMulti array, no anyOf');
    is_deeply([ $um->{items}{type}, $um->{items}{enum} ], [ 'string', \@opt ],
              'sep1330: untitledMulti items string enum');
    my $tm = $pr->{titledMulti} || {};
    ok(($tm->{type} // '') eq 'array' && !exists $tm->{items}{enum}, 'sep1330: titledMulti array, no items.enum');
    is_deeply($tm->{items}{anyOf}, $titled->('Choice'), 'sep1330: titledMulti items anyOf const/title');
    my $content = { untitledSingle => 'option1', titledSingle => 'value1', legacyEnum => 'opt1',
                    untitledMulti => [ 'option1', 'option2' ], titledMulti => [ 'value1', 'value2' ] };
    answer($t, $sid, $req->{json}{id}, { action => 'accept', content => $content });
    my @ev = take_all($s, 3);
    my ($json) = (text_of($ev[-1]{json}) // '') =~ /^Elicitation completed: action=accept, content=(\{.*\})$/;
    is_deeply(eval { McpTest::decode_json($json) }, $content, 'sep1330: result carries the content');
}

# --- no capability: isError, no request ----------------------------------------------

for my $case ([ {}, 'test_sampling', { prompt => 'x' }, 'sampling' ],
              [ {}, 'test_elicitation', { message => 'x' }, 'elicitation' ],
              [ { sampling => {} }, 'test_elicitation', { message => 'x' }, 'elicitation' ],
              [ { elicitation => {} }, 'test_sampling', { prompt => 'x' }, 'sampling' ],
              [ { sampling => {} }, 'test_elicitation_sep1034_defaults', {}, 'elicitation' ],
              [ {}, 'test_elicitation_sep1330_enums', {}, 'elicitation' ]) {
    my ($caps, $tool, $args, $what) = @$case;
    my ($s) = $t->mcp_initialize(capabilities => $caps);
    my $have = join(',', sort keys %$caps) || 'none';
    my ($msg, $r) = $t->mcp_request($s, 'tools/call', { name => $tool, arguments => $args }, id => 'nc');
    like($r->{headers}{'content-type'} // '', qr{^application/json\b},
         "$tool, capabilities $have: application/json (no request sent)");
    is(scalar @{ $r->{messages} }, 1, "$tool, capabilities $have: only the response");
    ok($msg && $msg->{result} && JSON::PP::is_bool($msg->{result}{isError}) && $msg->{result}{isError},
       "$tool, capabilities $have: isError true");
    like(text_of($msg) // '', qr/does not support $what/, "$tool, capabilities $have: says why");
}

# --- timeout, errors, unknown ids ---------------------------------------------------------

{
    my $mark = $t->log_mark;
    my ($s, $req) = start_call($sid, 'to1', 'test_sampling', { prompt => 'nobody answers' });
    my $t0 = time;
    my @ev = take_all($s, 5);
    my $took = time - $t0;
    ended_ok($s, 'no answer: the stream ends');
    ok($took >= 0.9 && $took < 3, sprintf('no answer: the result comes after mcp_request_timeout 1s (%.2f s)', $took));
    my $res = $ev[-1] && $ev[-1]{json} || {};
    is($res->{id}, 'to1', 'no answer: the response to the call');
    ok($res->{result} && $res->{result}{isError}, 'no answer: isError true');
    is(text_of($res), 'Sampling failed', 'no answer: "Sampling failed"');
    my $n = $req->{json}{id};
    ok($t->wait_for_log(qr/\[info\].*did not answer request $n of call "tools\/call" in time/, 2, $mark),
       'no answer: an [info] line names the request');

    my $mark2 = $t->log_mark;
    my $r = answer($t, $sid, $n, sampling_answer('too late'));
    is($r->{status}, 202, 'a late answer: 202');
    is($r->{body}, '', 'a late answer: empty body');
    ok($t->wait_for_log(qr/\[info\].*response to unknown or expired request $n ignored/, 2, $mark2),
       'a late answer: ignored, with an [info] line');
}

{
    my $mark = $t->log_mark;
    my $r = answer($t, $sid, 987654, sampling_answer('who asked?'));
    is($r->{status}, 202, 'an answer to an unknown id: 202');
    is($r->{body}, '', 'an answer to an unknown id: empty body');
    ok($t->wait_for_log(qr/\[info\].*response to unknown or expired request 987654 ignored/, 2, $mark),
       'an answer to an unknown id: [info] line');
    $r = answer($t, $sid, 'srv-x', {});
    is($r->{status}, 202, 'an answer with a string id: 202');
    $r = answer($t, $sid, 0, {});
    is($r->{status}, 202, 'an answer with id 0: 202');
}

{
    # The client declines with a JSON-RPC error.
    my ($s, $req) = start_call($sid, 'er1', 'test_sampling', { prompt => 'no' });
    my $r = answer($t, $sid, $req->{json}{id}, undef,
                   error => { code => -1, message => 'User rejected sampling request' });
    is($r->{status}, 202, 'an error answer: 202');
    my @ev = take_all($s, 3);
    is(text_of($ev[-1]{json}), 'Sampling failed', 'an error answer: "Sampling failed"');
    ok($ev[-1]{json}{result}{isError}, 'an error answer: isError true');
}

{
    # Another session cannot answer; the first answer wins, a second one is ignored.
    my ($other) = $t->mcp_initialize(capabilities => \%CAPS);
    my ($s, $req) = start_call($sid, 'x1', 'test_sampling', { prompt => 'mine' });
    my $n = $req->{json}{id};
    is(answer($t, $other, $n, sampling_answer('stolen'))->{status}, 202,
       'an answer from another session: 202');
    ok(!defined take($s, 0.3), '... and the call still waits');
    answer($t, $sid, $n, sampling_answer('first'));
    answer($t, $sid, $n, sampling_answer('second'));
    my @ev = take_all($s, 3);
    is(text_of($ev[-1]{json}), 'LLM response: first', 'the right session\'s first answer is the one used');
}

ok(!(grep { $_ > 1 } values %request_ids) && keys %request_ids >= 10,
   'server request ids are unique in the session (' . join(',', sort { $a <=> $b } keys %request_ids) . ')');

# --- the key test: answers on fresh connections, reaching other workers -----------------

{
    my $rounds = 40;
    my ($ok, @fail) = (0);
    for my $n (1 .. $rounds) {
        my $elicit = $n % 4 == 0;
        my ($s_n) = $t->mcp_initialize(capabilities => \%CAPS);
        my $s = call_stream($t, $s_n, "round-$n", $elicit ? ('test_elicitation', { message => "m$n" })
                                                          : ('test_sampling', { prompt => "p$n" }),
                            tag => "call-$n");
        take($s, 3);
        my $req = take($s, 3);
        my $want = $elicit ? qr/^User response: action=accept, content=\{"username":"u$n"\}$/
                           : qr/^LLM response: answer $n$/;
        my $r = answer($t, $s_n, $req && $req->{json}{id},
                       $elicit ? { action => 'accept', content => { username => "u$n" } }
                               : sampling_answer("answer $n"),
                       tag => "answer-$n");
        my @ev = take_all($s, 3);
        my $text = text_of($ev[-1] && $ev[-1]{json}) // '';
        if ($r->{status} == 202 && $text =~ $want && $s->is_done && !$s->{error}) { $ok++ }
        else { push @fail, "round $n: answer $r->{status}, result '$text'" }
    }
    is($ok, $rounds, "$rounds rounds (fresh connections for call and answer): all succeed")
        or diag(join "\n", @fail);

    my $pids = pids_by_tag($t, [ map { ("call-$_", "answer-$_") } 1 .. $rounds ]);
    my @logged = grep { $pids->{"call-$_"} && $pids->{"answer-$_"} } 1 .. $rounds;
    is(scalar @logged, $rounds, 'access log: the worker of every call and answer');
    my @cross = grep { $pids->{"call-$_"}[0] != $pids->{"answer-$_"}[0] } @logged;
    my %workers = map { ($pids->{"call-$_"}[0] => 1, $pids->{"answer-$_"}[0] => 1) } @logged;
    cmp_ok(scalar @cross, '>=', 1, scalar(@cross) . " of $rounds answers reached another worker than"
           . ' the waiting call (' . scalar(keys %workers) . ' workers used)');
}

$t->stop;
done_testing;
