// A sharded sweep as a real Slurm job array (tools/slurm/README.md): the test starts its
// own munged and a single-node Slurm (slurmctld + slurmd, as root, with a config, key, socket,
// state and pid files in a temporary folder), submits tools/slurm/submit_sweep.sh (3 shards and
// a dependent merge job), waits with a bounded loop, checks the merged results equal an
// unsharded sweep, and stops the daemons by their pid files. Skipped (with a message) where
// slurm-wlm or munge is not installed, or when not running as root.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/strings.h"
#include "tests/sweep/sweep_test_util.h"

using Catch::Matchers::Contains;
using pc::test::Run;

namespace {

namespace stdfs = std::filesystem;

std::string Q(const std::string& s) { return "'" + s + "'"; }

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Waits up to `seconds` for `done`, checking every 0.5 s.
bool WaitFor(double seconds, const std::function<bool()>& done) {
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return done();
}

// Daemons started so far, stopped in reverse order by their pid files (SIGTERM, then SIGKILL
// after 10 s) when destroyed, also when the start of a later one fails.
class Daemons {
 public:
  ~Daemons() {
    for (auto it = pid_files_.rbegin(); it != pid_files_.rend(); ++it) {
      std::string text = Slurp(*it);
      pid_t pid = static_cast<pid_t>(std::atol(text.c_str()));
      if (pid <= 1) continue;
      ::kill(pid, SIGTERM);
      if (!WaitFor(10, [&] { return ::kill(pid, 0) != 0; })) ::kill(pid, SIGKILL);
    }
  }
  void Add(const std::string& pid_file) { pid_files_.push_back(pid_file); }

 private:
  std::vector<std::string> pid_files_;
};

// munged + slurmctld + slurmd on this machine, stopped (by their pid files) when destroyed.
class LocalSlurm {
 public:
  explicit LocalSlurm(const std::string& dir) : dir_(dir) {
    for (const char* sub : {"state", "spool", "log", "munge"}) stdfs::create_directories(dir_ + "/" + sub);
    // A private munge key and socket: nothing of a munged the machine may already run is touched.
    const std::string key = dir_ + "/munge/munge.key";
    {
      std::ifstream rnd("/dev/urandom", std::ios::binary);
      std::string bytes(1024, '\0');
      rnd.read(&bytes[0], static_cast<std::streamsize>(bytes.size()));
      std::ofstream(key, std::ios::binary) << bytes;
    }
    stdfs::permissions(key, stdfs::perms::owner_read);
    const std::string m = dir_ + "/munge";
    auto munge = Run("munged --force --socket=" + Q(m + "/munge.socket") + " --pid-file=" + Q(m + "/munged.pid") +
                     " --log-file=" + Q(m + "/munged.log") + " --seed-file=" + Q(m + "/munged.seed") +
                     " --key-file=" + Q(key));
    INFO(munge.err << Slurp(m + "/munged.log"));
    REQUIRE(munge.exit_code == 0);
    daemons_.Add(m + "/munged.pid");

    // Ports from the pid, so that two test runs (or a real Slurm) do not collide.
    const int port = 20000 + static_cast<int>(::getpid() % 4000) * 2;
    conf_ = dir_ + "/slurm.conf";
    std::ofstream(conf_) << "ClusterName=perpcomptest\n"
                            "SlurmctldHost=localhost\n"
                         << "SlurmctldPort=" << port << "\nSlurmdPort=" << port + 1 << "\n"
                         << "SlurmUser=root\nSlurmdUser=root\n"
                            "AuthType=auth/munge\n"
                         << "AuthInfo=socket=" << m << "/munge.socket\n"
                         << "StateSaveLocation=" << dir_ << "/state\n"
                         << "SlurmdSpoolDir=" << dir_ << "/spool\n"
                         << "SlurmctldLogFile=" << dir_ << "/log/ctld.log\n"
                         << "SlurmdLogFile=" << dir_ << "/log/d.log\n"
                         << "SlurmctldPidFile=" << dir_ << "/ctld.pid\n"
                         << "SlurmdPidFile=" << dir_ << "/d.pid\n"
                         << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                            "JobAcctGatherType=jobacct_gather/none\nSelectType=select/cons_tres\n"
                            "SelectTypeParameters=CR_Core\nReturnToService=2\nMpiDefault=none\n"
                            "NodeName=localhost CPUs=2 State=UNKNOWN\n"
                            "PartitionName=main Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n";
    env_ = "SLURM_CONF=" + Q(conf_) + " ";
    auto ctld = Run(env_ + "slurmctld -c -f " + Q(conf_));
    INFO(ctld.err);
    REQUIRE(ctld.exit_code == 0);
    daemons_.Add(dir_ + "/ctld.pid");
    auto d = Run(env_ + "slurmd -f " + Q(conf_) + " -N localhost");
    INFO(d.err);
    REQUIRE(d.exit_code == 0);
    daemons_.Add(dir_ + "/d.pid");
    const bool idle = WaitFor(60, [&] { return Run(env_ + "sinfo -h -o %t").out.find("idle") != std::string::npos; });
    INFO(Slurp(dir_ + "/log/ctld.log") << Slurp(dir_ + "/log/d.log"));
    REQUIRE(idle);
  }

  // A command line with this cluster's SLURM_CONF.
  std::string Env() const { return env_; }
  std::string Logs() const { return Slurp(dir_ + "/log/ctld.log") + Slurp(dir_ + "/log/d.log"); }

 private:
  std::string dir_, conf_, env_;
  Daemons daemons_;  // destroyed (daemons stopped) also when the constructor fails
};

bool Installed(const char* program) { return Run(std::string("command -v ") + program).exit_code == 0; }

}  // namespace

TEST_CASE("slurm: a sharded sweep as a job array, merged, equals the unsharded sweep", "[sweep][slurm][slow]") {
  PC_SKIP_IF(!Installed("slurmctld") || !Installed("slurmd") || !Installed("sbatch") || !Installed("munged"),
             "slurm-wlm or munge is not installed (tools/setup.sh installs them)");
  PC_SKIP_IF(::geteuid() != 0, "the local Slurm runs as root (tools/slurm/README.md); not root here");
  const pc::test::SweepFixture f = pc::test::MakeSweepFixture("slurm");
  const std::string sweep = pc::test::ThreeRunSweep(f.dir);

  // The unsharded sweep, directly.
  const std::string whole = f.dir + "/whole.h5";
  auto r = pc::test::RunPerpcomp("sweep " + f.Args(sweep, whole));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);

  LocalSlurm slurm(f.dir + "/slurm");
  const std::string out = f.dir + "/sharded.h5";
  const std::string submit = pc::test::SourceDir() + "/tools/slurm/submit_sweep.sh";
  auto sub = Run("cd " + Q(f.dir) + " && " + slurm.Env() + "PERPCOMP=" + Q(pc::test::PerpcompBin()) + " " + Q(submit) +
                 " 3 " + f.Args(sweep, out));
  INFO(sub.out << sub.err);
  REQUIRE(sub.exit_code == 0);
  const auto ids = pc::Split(pc::Trim(sub.out), ' ');
  REQUIRE(ids.size() == 2);

  // Both jobs leave the queue (done, failed or cancelled) within the bound.
  const bool finished = WaitFor(600, [&] {
    auto q = Run(slurm.Env() + "squeue -h -j " + ids[0] + "," + ids[1]);
    return q.exit_code == 0 && pc::Trim(q.out).empty();
  });
  std::string logs;
  for (int k = 0; k < 3; ++k) logs += Slurp(f.dir + "/sharded.shard-" + std::to_string(k) + "-of-3.log");
  logs += Slurp(f.dir + "/sharded.merge.log");
  INFO("job logs:\n" << logs << "\nslurm logs:\n" << slurm.Logs());
  REQUIRE(finished);
  for (int k = 0; k < 3; ++k) {
    CHECK(stdfs::exists(f.dir + "/sharded.shard-" + std::to_string(k) + "-of-3.h5"));
  }
  CHECK_THAT(logs, Contains("task 0 of 3") && Contains("task 2 of 3") && Contains("merged 3 runs from 3 files"));
  REQUIRE(stdfs::exists(out));
  pc::test::CheckSameResults(whole, out);
}
